"""Every write of the app is refused for a suspended or cancelled tenant, and changes nothing;
reads keep working. The operations are read from the app's routes (tests/access.py), so a
write added later is covered without editing this file."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tenantplane.db.engine import Database
from tenantplane.http.access import Access
from tenantplane.tenant.models import TenantState
from tests.access import Operation, introspection_app, operations
from tests.factories import Factory, TenantFixture
from tests.http_client import bearer
from tests.tenant.conftest import Operated
from tests.test_access_matrix import snapshot

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
OPERATIONS = operations(introspection_app())
TENANT_WRITES = [op for op in OPERATIONS if op.tenant_scoped and op.method in WRITE_METHODS]
TENANT_READS = [op for op in OPERATIONS if op.tenant_scoped and op.method == "GET"]
# The writes open to inactive tenants, which change nothing here: the payment portal (how
# they pay) and, while suspended, cluster credentials (read-only ones: docs/clusters.md).
PORTAL = "POST /api/v1/tenants/{tenant}/billing/portal-session"
CREDENTIALS = "POST /api/v1/tenants/{tenant}/clusters/{name}/credentials"
REFUSAL_CODES = {"suspend": "TENANT_SUSPENDED", "cancel": "TENANT_CANCELLED"}
STATES = {"suspend": TenantState.suspended, "cancel": TenantState.cancelled}

WEBHOOK = {"name": "ops", "webhook_configs": [{"url": "https://hooks.example.com/alerts"}]}
WINDOW = [{"weekdays": ["monday:friday"], "times": [{"start_time": "09:00", "end_time": "17:00"}]}]
TEMPLATE = '{{ define "mail.subject" }}{{ .Status }}{{ end }}'
MEMBER = "ops@example.com"
# Bodies a write would accept from an active tenant (anything else gets `{}`).
BODIES: dict[str, Any] = {
    "PATCH /tenants/{tenant}": {"plan": "enterprise"},
    "POST /tenants/{tenant}/members": {"email": "late@example.com", "role": "admin"},
    "PATCH /tenants/{tenant}/members/{email}": {"role": "admin"},
    "POST /tenants/{tenant}/apikeys": {"displayName": "late", "role": "admin"},
    "POST /tenants/{tenant}/secrets": {"name": "late", "secretPath": "kv/late"},
    "PATCH /tenants/{tenant}/secrets/{name}": {"sync": []},
    "POST /tenants/{tenant}/clusters": {"name": "late", "highAvailability": True},
    "PATCH /tenants/{tenant}/clusters/{name}": {"resources": {"cpu": "2"}},
    "PUT /tenants/{tenant}/alerting/config": {
        "receivers": [{"name": "late"}],
        "route": {"receiver": "late"},
    },
    "PUT /tenants/{tenant}/alerting/receivers/{name}": {
        "webhook_configs": [{"url": "https://late.example.com/"}]
    },
    "PUT /tenants/{tenant}/alerting/routes/{id}": {"receiver": "default", "group_wait": "1m"},
    "PUT /tenants/{tenant}/alerting/route": {"receiver": "default", "group_wait": "2m"},
    "PUT /tenants/{tenant}/alerting/global": {"resolve_timeout": "1m"},
    "PUT /tenants/{tenant}/alerting/templates/{filename}": {"contents": "{{ .Status }}"},
    "PUT /tenants/{tenant}/alerting/time-intervals/{name}": {"time_intervals": []},
}


def relative(operation: Operation) -> str:
    return f"{operation.method} {operation.path.removeprefix('/api/v1')}"


def url_of(operation: Operation, tenant: TenantFixture, key_id: str) -> str:
    """The path with the names of resources the tenant has (see ``populate``)."""
    path = operation.path.removeprefix("/api/v1")
    names = {
        "tenant": tenant.name,
        "email": MEMBER,
        "id": "0" if "/alerting/" in path else key_id,
        "filename": "mail.tmpl",
    }
    by_feature = {
        "clusters": "app",
        "secrets": "db",
        "receivers": "ops",
        "time-intervals": "office",
    }

    def value(match: re.Match[str]) -> str:
        name = match.group(1).split(":")[0]
        if name in names:
            return names[name]
        feature = path[: match.start()].rstrip("/").rsplit("/", 1)[-1]
        return by_feature.get(feature, "placeholder-0")

    return re.sub(r"\{([^}]+)\}", value, path)


async def populate(client: httpx.AsyncClient, tenant: TenantFixture) -> str:
    """One resource of every kind, made through the API while the tenant is active;
    returns the id of an extra API key."""
    headers = bearer(tenant.admin_key)
    path = tenant.path
    calls: list[tuple[str, str, Any]] = [
        ("POST", f"{path}/clusters", {"name": "app"}),
        (
            "POST",
            f"{path}/secrets",
            {"name": "db", "secretPath": "kv/db", "sync": [{"cluster": "app", "namespace": "a"}]},
        ),
        ("POST", f"{path}/members", {"email": MEMBER, "role": "readonly"}),
        ("PUT", f"{path}/alerting/receivers/ops", WEBHOOK),
        ("PUT", f"{path}/alerting/routes/0", {"receiver": "ops"}),
        ("PUT", f"{path}/alerting/templates/mail.tmpl", {"contents": TEMPLATE}),
        ("PUT", f"{path}/alerting/time-intervals/office", {"time_intervals": WINDOW}),
    ]
    for method, url, body in calls:
        response = await client.request(method, url, json=body, headers=headers)
        assert response.status_code in (200, 201), f"{method} {url}: {response.text}"
    key = await client.post(
        f"{path}/apikeys", json={"displayName": "spare", "role": "admin"}, headers=headers
    )
    assert key.status_code == 201, key.text
    key_id: str = key.json()["id"]
    return key_id


def test_the_writes_are_read_from_the_app() -> None:
    found = {relative(op) for op in TENANT_WRITES}
    assert {
        "POST /tenants/{tenant}/clusters",
        "POST /tenants/{tenant}/apikeys",
        "POST /tenants/{tenant}/members",
        "PUT /tenants/{tenant}/alerting/config",
        "PATCH /tenants/{tenant}/secrets/{name}",
        "DELETE /tenants/{tenant}/members/{email}",
    } <= found
    assert set(BODIES) <= found  # no body for a write that no longer exists


def test_only_the_reviewed_writes_are_open_to_inactive_tenants() -> None:
    """A route opens itself to inactive tenants in its signature; this list is the review."""
    open_routes = {str(op): op.writable_in for op in TENANT_WRITES if op.writable_in}
    assert open_routes == {
        PORTAL: frozenset({TenantState.suspended, TenantState.cancelled}),
        CREDENTIALS: frozenset({TenantState.suspended}),
    }


@pytest.mark.parametrize("command", ["suspend", "cancel"])
async def test_every_write_is_refused_and_changes_nothing_while_reads_work(
    command: str, deployment: Operated, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    client = deployment.client
    key_id = await populate(client, tenant)
    await deployment.cli("tenant", command, tenant.name)
    code = REFUSAL_CODES[command]

    before = await snapshot(database)
    wrong = []
    for operation in TENANT_WRITES:
        if STATES[command] in operation.writable_in:
            continue
        body = BODIES.get(relative(operation), {}) if operation.method != "DELETE" else None
        for key in (tenant.admin_key, tenant.readonly_key):
            response = await client.request(
                operation.method, url_of(operation, tenant, key_id), json=body, headers=bearer(key)
            )
            # A readonly key is refused an admin's write for its role, before the state.
            by_role = key != tenant.admin_key and operation.level is Access.admin
            expected = None if by_role else code
            if response.status_code != 403 or response.json().get("code") != expected:
                wrong.append(f"{operation}: {response.status_code} {response.text}")
    assert wrong == []
    assert await snapshot(database) == before

    for operation in TENANT_READS:
        response = await client.get(
            url_of(operation, tenant, key_id), headers=bearer(tenant.admin_key)
        )
        assert response.status_code not in (401, 403, 500), f"{operation}: {response.text}"
    state = (await client.get(tenant.path, headers=bearer(tenant.readonly_key))).json()["state"]
    assert state == {"suspend": "suspended", "cancel": "cancelled"}[command]


@pytest.mark.parametrize("command", ["suspend", "cancel"])
async def test_the_state_is_answered_before_the_body(
    command: str, deployment: Operated, factory: Factory, database: Database
) -> None:
    """The order of checks (docs/api.md): a write of an inactive tenant is refused for the
    state even when its body and its Idempotency-Key are invalid."""
    tenant = await factory.tenant()
    client = deployment.client
    key_id = await populate(client, tenant)
    await deployment.cli("tenant", command, tenant.name)
    before = await snapshot(database)
    wrong = []
    for operation in TENANT_WRITES:
        if STATES[command] in operation.writable_in or operation.method == "DELETE":
            continue
        response = await client.request(
            operation.method,
            url_of(operation, tenant, key_id),
            json=["not", "a", "valid", "body"],
            # Too long (at most 255): a bad key is refused after the state too.
            headers={**bearer(tenant.admin_key), "Idempotency-Key": f'"{"k" * 300}"'},
        )
        if response.status_code != 403 or response.json().get("code") != REFUSAL_CODES[command]:
            wrong.append(f"{operation}: {response.status_code} {response.text}")
    assert wrong == []
    assert await snapshot(database) == before


@pytest.mark.parametrize("command", ["suspend", "cancel"])
async def test_an_inactive_tenant_can_still_open_the_payment_portal(
    command: str, deployment: Operated, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await deployment.cli("tenant", command, tenant.name)
    response = await deployment.client.post(
        f"{tenant.path}/billing/portal-session", headers=bearer(tenant.admin_key)
    )
    # Past the access check: this deployment has no payment provider.
    assert response.status_code == 503
    assert response.json()["code"] == "BILLING_NOT_CONFIGURED"


async def test_resume_restores_writes(deployment: Operated, factory: Factory) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    before = await deployment.client.get(tenant.path, headers=headers)
    await deployment.cli("tenant", "suspend", tenant.name)
    suspended = await deployment.client.get(tenant.path, headers=headers)
    assert suspended.json()["state"] == "suspended"
    assert suspended.headers["ETag"] != before.headers["ETag"]
    refused = await deployment.client.post(
        f"{tenant.path}/clusters", json={"name": "app"}, headers=headers
    )
    assert refused.status_code == 403
    assert refused.json()["code"] == "TENANT_SUSPENDED"

    await deployment.cli("tenant", "resume", tenant.name)
    created = await deployment.client.post(
        f"{tenant.path}/clusters", json={"name": "app"}, headers=headers
    )
    assert created.status_code == 201, created.text
    assert (await deployment.client.get(tenant.path, headers=headers)).json()["state"] == "active"
