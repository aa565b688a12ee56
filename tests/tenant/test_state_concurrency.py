"""On PostgreSQL a write that arrives while the tenant's state is being changed waits for the
change and then obeys the new state: it cannot slip through on the state it read before the
change committed (a cluster created that way would outlive the cancellation). SQLite runs
one writing transaction at a time, so the race cannot happen there; this runs on PostgreSQL
only, in a database of its own."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from tenantplane.db.engine import Database
from tenantplane.tenant import lifecycle
from tests.conftest import TEST_SECRET
from tests.factories import Factory, TenantFixture
from tests.http_client import api_on_a_postgres_of_its_own, bearer

DEADLINE_SECONDS = 30.0
KEYED = {"Idempotency-Key": '"state-change-1"'}
WAITING_FOR_TENANT_LOCK = text(
    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = :id"
)


@dataclass
class Postgres:
    database: Database
    client: httpx.AsyncClient
    factory: Factory


@pytest.fixture
async def postgres(tmp_path: Path) -> AsyncIterator[Postgres]:
    async with api_on_a_postgres_of_its_own("tenantplane_states", tmp_path) as own:
        _, database, client = own
        yield Postgres(database, client, Factory(database, TEST_SECRET.encode()))


async def wait_for_a_waiter(
    database: Database, tenant_id: int, write: asyncio.Task[httpx.Response]
) -> None:
    """Until a transaction waits for the tenant's state lock, or the write is answered
    without waiting (polled, with a deadline)."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + DEADLINE_SECONDS
    while not write.done():
        async with database.sessionmaker() as session:
            waiting = (await session.execute(WAITING_FOR_TENANT_LOCK, {"id": tenant_id})).scalar()
        if waiting:
            return
        assert loop.time() < give_up, "no write ever waited for the state change"
        await asyncio.sleep(0.02)


# Every write takes the tenant's state lock in its access check, in the request's
# transaction: before the Idempotency-Key is claimed, before the targets are looked up.
WRITES: dict[str, tuple[str, dict[str, Any], dict[str, str]]] = {
    "cluster": ("clusters", {"name": "app"}, {}),
    "secret": ("secrets", {"name": "db", "secretPath": "kv/db"}, {}),
    "secret under a key": ("secrets", {"name": "db", "secretPath": "kv/db"}, KEYED),
    "secret with targets": (
        "secrets",
        {"name": "db", "secretPath": "kv/db", "sync": [{"cluster": "prod", "namespace": "a"}]},
        {},
    ),
}


async def request_again(
    postgres: Postgres,
    tenant: TenantFixture,
    feature: str,
    body: dict[str, Any],
    headers: dict[str, str],
) -> httpx.Response:
    return await postgres.client.post(
        f"{tenant.path}/{feature}", json=body, headers={**bearer(tenant.admin_key), **headers}
    )


@pytest.mark.parametrize("write", list(WRITES))
async def test_a_write_during_a_state_change_waits_and_obeys_it(
    postgres: Postgres, write: str
) -> None:
    feature, body, headers = WRITES[write]
    tenant = await postgres.factory.tenant()
    await postgres.factory.cluster_row(tenant.id, "prod")
    async with postgres.database.transaction() as session:
        await lifecycle.suspend(session, tenant.name)  # not committed yet
        answer = asyncio.create_task(request_again(postgres, tenant, feature, body, headers))
        await wait_for_a_waiter(postgres.database, tenant.id, answer)
    response = await answer
    assert response.status_code == 403, response.text
    assert response.json()["code"] == "TENANT_SUSPENDED"
    listed = await postgres.client.get(f"{tenant.path}/{feature}", headers=bearer(tenant.admin_key))
    names = [item["name"] for item in listed.json()["items"]]
    assert names == (["prod"] if feature == "clusters" else []), names
    if headers:
        # The refusal came before the key was claimed: not kept, so the same request runs
        # once the tenant is active again (a kept 403 would be replayed).
        async with postgres.database.transaction() as session:
            await lifecycle.resume(session, tenant.name)
        again = await request_again(postgres, tenant, feature, body, headers)
        assert again.status_code == 201, again.text


async def test_writes_of_one_tenant_do_not_wait_for_each_other(postgres: Postgres) -> None:
    """The lock a write takes is shared: concurrent writes of one tenant all go through."""
    tenant = await postgres.factory.tenant()
    responses = await asyncio.gather(
        *(
            postgres.client.post(
                f"{tenant.path}/apikeys",
                json={"displayName": f"k{index}", "role": "readonly"},
                headers=bearer(tenant.admin_key),
            )
            for index in range(8)
        )
    )
    assert [response.status_code for response in responses] == [201] * 8
