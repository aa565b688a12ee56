"""On PostgreSQL a create holds its tenant's row until it commits, so that the creates of
one tenant check the plan's limits one after another. That lock must not hold back the
writes that only reference the tenant (their foreign-key checks take FOR KEY SHARE on its
row), a secret's create for one. A member write's lock of the tenant likewise. SQLite runs
one writing transaction at a time, so this runs on PostgreSQL only, in a database of its
own."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.cluster.repository import ClusterRepository
from tenantplane.db.engine import Database
from tenantplane.member.repository import MemberRepository
from tests.conftest import TEST_SECRET
from tests.factories import Factory
from tests.http_client import api_on_a_postgres_of_its_own, bearer

#: Far below the sessions' lock timeout (5 s), far above a look or a create on loopback.
PATIENCE_SECONDS = 3.0


@pytest.fixture
async def postgres(tmp_path: Path) -> AsyncIterator[tuple[Database, httpx.AsyncClient]]:
    async with api_on_a_postgres_of_its_own("tenantplane_tenant_lock", tmp_path) as own:
        _, database, client = own
        yield database, client


async def _lock_for_a_create(session: AsyncSession, tenant_id: int) -> None:
    assert await ClusterRepository.from_session(session).lock_tenant(tenant_id) is not None


async def _lock_for_a_member_write(session: AsyncSession, tenant_id: int) -> None:
    await MemberRepository(session).lock_list(tenant_id)


@pytest.mark.parametrize("lock", [_lock_for_a_create, _lock_for_a_member_write])
async def test_a_write_holding_its_tenant_holds_back_no_secret_create(
    postgres: tuple[Database, httpx.AsyncClient],
    lock: Callable[[AsyncSession, int], Awaitable[None]],
) -> None:
    database, client = postgres
    tenant = await Factory(database, TEST_SECRET.encode()).tenant()
    async with database.transaction() as holding:
        await lock(holding, tenant.id)
        created = await asyncio.wait_for(
            client.post(
                f"{tenant.path}/secrets",
                json={"name": "db", "secretPath": "apps/db"},
                headers=bearer(tenant.admin_key),
            ),
            PATIENCE_SECONDS,
        )
    assert created.status_code == 201, created.text
