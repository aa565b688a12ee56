"""The access matrix: every operation of the app, called with every kind of caller.

The operations are read from the app itself (tests/access.py), so routes added later are
covered without touching this file, and a route that declares no access level fails here.
Each call fills the path's parameters with plausible values and sends ``{}`` as the body of
writes; whatever the operation then answers, a status other than 401/403 means the caller
got past authentication and authorization ("allowed"). Denied calls must leave every table
as it was, but for the audit event each refused write (403) records in the tenant's stream.
"""

from __future__ import annotations

import enum
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import Request
from sqlalchemy import func, select

from tenantplane.access import WRITE_METHODS as STATE_CHECKED_METHODS
from tenantplane.access import TenantMember, TenantMemberReads
from tenantplane.db.engine import Database
from tenantplane.db.models import Base
from tenantplane.event.models import Event
from tenantplane.http.access import Access
from tenantplane.member.models import Role
from tests.access import Operation, UndeclaredAccess, introspection_app, operations
from tests.conftest import accepting, make_settings
from tests.factories import Factory
from tests.http_client import BASE_URL, api_client, bearer, running_app
from tests.oidc_provider import MockProvider

READER = "reader@matrix.example.com"
BOSS = "boss@matrix.example.com"
STRANGER = "stranger@matrix.example.com"  # an admin, but of another tenant
# Columns that record use of a credential; authentication may write them before it denies.
USAGE_COLUMNS = frozenset({"last_used_at"})
# The event stream: a refused write is recorded there (counted, not compared).
EVENT_TABLES = frozenset({"events", "event_chains"})
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH"})
DENIED = frozenset({401, 403})


class Outcome(enum.Enum):
    allowed = "allowed"
    unauthenticated = 401
    forbidden = 403


@dataclass(frozen=True)
class Caller:
    name: str
    # Outcome by level: public, authenticated, member, admin.
    outcomes: tuple[Outcome, Outcome, Outcome, Outcome]

    def expected(self, level: Access) -> Outcome:
        order = [Access.public, Access.authenticated, Access.member, Access.admin]
        return self.outcomes[order.index(level)]


A, U, F = Outcome.allowed, Outcome.unauthenticated, Outcome.forbidden
CALLERS = [
    Caller("no credentials", (A, U, U, U)),
    Caller("malformed header", (A, U, U, U)),
    Caller("expired key", (A, U, U, U)),
    Caller("revoked key", (A, U, U, U)),
    Caller("other tenant's admin key", (A, A, F, F)),
    Caller("readonly key", (A, A, A, F)),
    Caller("admin key", (A, A, A, A)),
    Caller("OIDC readonly member", (A, A, A, F)),
    Caller("OIDC admin member", (A, A, A, A)),
    Caller("OIDC non-member", (A, A, F, F)),
]


OPERATIONS = operations(introspection_app())


def fill_path(operation: Operation, tenant: str) -> str:
    """Plausible values for path parameters: the tenant's name, a well-formed email, and a
    name valid as a DNS label for anything else."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1).split(":")[0]
        if name == "tenant":
            return tenant
        if name == "email":
            return "nobody@example.com"
        return "placeholder-0"

    return re.sub(r"\{([^}]+)\}", value, operation.path)


async def snapshot(database: Database) -> dict[str, list[str]]:
    """Every row of every table (but usage timestamps and the event stream), in a stable
    order."""
    tables: dict[str, list[str]] = {}
    async with database.transaction() as session:
        for table in Base.metadata.sorted_tables:
            if table.name in EVENT_TABLES:
                continue
            columns = [column for column in table.columns if column.name not in USAGE_COLUMNS]
            rows = (await session.execute(select(*columns))).all()
            tables[table.name] = sorted(repr(tuple(row)) for row in rows)
    return tables


async def refusals(database: Database) -> int:
    """The audit events in every tenant's stream (counted around denied calls only)."""
    async with database.transaction() as session:
        statement = select(func.count()).where(Event.type == "audit")
        return int((await session.execute(statement)).scalar_one())


@pytest.fixture
async def matrix_client(
    database: Database, database_url: str, tmp_path: Path, oidc_provider: MockProvider
) -> AsyncIterator[httpx.AsyncClient]:
    settings = make_settings(
        database_url,
        tmp_path,
        **accepting(oidc_provider),
        # Ten callers, four of them refused, per operation: no backoff in the way.
        auth_failure_threshold=1_000_000,
        # The snapshots compare every row: a reconciler's lease taken between them (the
        # migration's billing schedule, due at once in a fresh database) is not a change
        # made by a refused call.
        run_reconcilers=False,
    )
    async with running_app(settings) as app, api_client(app) as client:
        yield client


async def credentials(
    factory: Factory, oidc_provider: MockProvider
) -> tuple[str, dict[str, dict[str, str]]]:
    """A tenant and the Authorization headers of every caller, relative to it."""
    tenant, other = await factory.tenant(), await factory.tenant()
    await factory.member(tenant.id, READER, Role.readonly)
    await factory.member(tenant.id, BOSS, Role.admin)
    await factory.member(other.id, STRANGER, Role.admin)
    headers = {
        "no credentials": {},
        "malformed header": {"Authorization": f"Basic {tenant.admin_key}"},
        "expired key": bearer(await factory.expired_api_key(tenant.id)),
        "revoked key": bearer(await factory.revoked_api_key(tenant.id)),
        "other tenant's admin key": bearer(other.admin_key),
        "readonly key": bearer(tenant.readonly_key),
        "admin key": bearer(tenant.admin_key),
        "OIDC readonly member": bearer(oidc_provider.id_token(READER)),
        "OIDC admin member": bearer(oidc_provider.id_token(BOSS)),
        "OIDC non-member": bearer(oidc_provider.id_token(STRANGER)),
    }
    assert set(headers) == {caller.name for caller in CALLERS}
    return tenant.name, headers


async def send(
    client: httpx.AsyncClient, operation: Operation, url: str, headers: dict[str, str]
) -> httpx.Response:
    body: dict[str, Any] | None = {} if operation.method in WRITE_METHODS else None
    return await client.request(operation.method, url, json=body, headers=headers)


def check(operation: Operation, caller: Caller, response: httpx.Response) -> None:
    expected = caller.expected(operation.declared())
    where = f"{operation} as {caller.name} ({operation.declared().value} level)"
    assert response.status_code != 500, f"{where}: 500 {response.text}"
    if expected is Outcome.allowed:
        assert response.status_code not in DENIED, (
            f"{where}: {response.status_code} {response.text}"
        )
    else:
        assert response.status_code == expected.value, f"{where}: {response.status_code}"
        assert "error" in response.json()


async def check_public(
    operation: Operation,
    client: httpx.AsyncClient,
    url: str,
    headers: dict[str, dict[str, str]],
    database: Database,
) -> None:
    """A public operation answers every caller alike: credentials neither open nor close
    it. (It may still refuse a request on its own terms, e.g. a webhook whose signature
    does not verify; then that refusal must change nothing.)"""
    before = await snapshot(database)
    statuses = {
        caller.name: (await send(client, operation, url, headers[caller.name])).status_code
        for caller in CALLERS
    }
    assert len(set(statuses.values())) == 1, f"{operation} answers callers differently: {statuses}"
    (status,) = set(statuses.values())
    assert status != 500, f"{operation}: 500"
    if status in DENIED:
        assert await snapshot(database) == before, f"a refused call to {operation} changed data"


@pytest.mark.parametrize("operation", OPERATIONS, ids=str)
async def test_access_matrix(
    operation: Operation,
    matrix_client: httpx.AsyncClient,
    factory: Factory,
    database: Database,
    oidc_provider: MockProvider,
) -> None:
    level = operation.declared()
    tenant, headers = await credentials(factory, oidc_provider)
    url = BASE_URL + fill_path(operation, tenant)
    if level is Access.public:
        await check_public(operation, matrix_client, url, headers, database)
        return
    denied = [c for c in CALLERS if c.expected(level) is not Outcome.allowed]
    allowed = [c for c in CALLERS if c.expected(level) is Outcome.allowed]

    before, events_before = await snapshot(database), await refusals(database)
    forbidden = 0
    for caller in denied:
        response = await send(matrix_client, operation, url, headers[caller.name])
        check(operation, caller, response)
        forbidden += response.status_code == 403
    assert await snapshot(database) == before, f"a denied call to {operation} changed data"
    recorded = await refusals(database) - events_before
    # Every write refused for access is recorded once; nothing else a denied call does is.
    assert recorded == (forbidden if operation.method in STATE_CHECKED_METHODS else 0)

    for caller in allowed:
        check(operation, caller, await send(matrix_client, operation, url, headers[caller.name]))


@pytest.mark.parametrize("operation", OPERATIONS, ids=str)
def test_every_route_declares_its_access_level(operation: Operation) -> None:
    operation.declared()


def test_the_matrix_covers_every_level_and_the_api() -> None:
    assert {operation.level for operation in OPERATIONS} >= {Access.public, Access.member}
    assert any(operation.level is Access.admin for operation in OPERATIONS)
    assert all(
        operation.method in {"GET", "POST", "PUT", "PATCH", "DELETE"} for operation in OPERATIONS
    )


@pytest.mark.parametrize("operation", OPERATIONS, ids=str)
def test_tenant_paths_require_membership_and_only_they(operation: Operation) -> None:
    """A route under /tenants/{tenant} that anyone could call would leak across tenants;
    a member-level route without {tenant} has no tenant to be a member of."""
    tenant_levels = {Access.member, Access.admin}
    assert operation.tenant_scoped == (operation.declared() in tenant_levels), str(operation)


@pytest.mark.parametrize(
    "operation", [op for op in OPERATIONS if op.method in STATE_CHECKED_METHODS], ids=str
)
def test_writes_declare_an_access_check_that_holds_the_tenant_state(operation: Operation) -> None:
    """The reading checks (TenantMemberReads, TenantAdminReads) open no session, so they
    cannot lock the tenant's state against a suspension: a write must not use them."""
    assert not operation.reads_only, f"{operation} declares a reading access check"


async def test_a_write_declared_with_a_reading_check_is_refused(
    database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    settings = make_settings(database_url, tmp_path, run_reconcilers=False)
    async with running_app(settings) as app, api_client(app) as client:

        async def misdeclared(principal: TenantMemberReads) -> dict[str, str]:
            return {"tenant": principal.tenant_name}

        app.add_api_route("/api/v1/tenants/{tenant}/misdeclared", misdeclared, methods=["POST"])
        answer = await client.post(f"{tenant.path}/misdeclared", headers=bearer(tenant.admin_key))
        assert answer.status_code == 500, answer.text
        assert "misdeclared" not in answer.text


def test_a_route_without_a_declared_level_fails() -> None:
    app = introspection_app()

    async def undeclared(tenant: str) -> dict[str, str]:
        return {"tenant": tenant}

    app.add_api_route("/api/v1/tenants/{tenant}/undeclared", undeclared, methods=["GET"])
    (found,) = [op for op in operations(app) if op.path.endswith("/undeclared")]
    assert found.level is None
    with pytest.raises(UndeclaredAccess, match="undeclared declares no access level"):
        found.declared()


def test_a_level_declared_through_a_feature_dependency_counts() -> None:
    from fastapi import Depends

    app = introspection_app()

    async def feature_dependency(principal: TenantMember, request: Request) -> str:
        return principal.tenant_name

    async def endpoint(tenant_name: str = Depends(feature_dependency)) -> str:
        return tenant_name

    app.add_api_route("/api/v1/tenants/{tenant}/indirect", endpoint, methods=["GET"])
    indirect = [op for op in operations(app) if op.path.endswith("/indirect")]
    assert indirect == [Operation("GET", "/api/v1/tenants/{tenant}/indirect", Access.member)]
