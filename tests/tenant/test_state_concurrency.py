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

import httpx
import pytest
from sqlalchemy import text

from tenantplane.db.engine import Database
from tenantplane.tenant import lifecycle
from tests.conftest import TEST_SECRET
from tests.factories import Factory
from tests.http_client import api_on_a_postgres_of_its_own, bearer

DEADLINE_SECONDS = 30.0
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


async def test_a_write_during_a_state_change_waits_and_obeys_it(postgres: Postgres) -> None:
    tenant = await postgres.factory.tenant()
    async with postgres.database.transaction() as session:
        await lifecycle.suspend(session, tenant.name)  # not committed yet
        write = asyncio.create_task(
            postgres.client.post(
                f"{tenant.path}/clusters", json={"name": "app"}, headers=bearer(tenant.admin_key)
            )
        )
        await wait_for_a_waiter(postgres.database, tenant.id, write)
    response = await write
    assert response.status_code == 403, response.text
    assert response.json()["code"] == "TENANT_SUSPENDED"
    clusters = await postgres.client.get(
        f"{tenant.path}/clusters", headers=bearer(tenant.admin_key)
    )
    assert clusters.json()["items"] == []


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
