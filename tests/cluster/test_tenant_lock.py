"""On PostgreSQL a create holds its tenant's row until it commits, so that the creates of
one tenant check the plan's limits one after another. That lock must not hold back the
writes that only reference the tenant (their foreign-key checks take FOR KEY SHARE on its
row): a reconciler's look, which updates a cluster row twice in one transaction (its lease,
then its status; PostgreSQL checks the key again on the second update), and a secret's
create. A member write's lock of the tenant likewise. SQLite runs one writing transaction
at a time, so this runs on PostgreSQL only, in a database of its own."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.catalogue.versions import load_versions
from tenantplane.cluster.models import Cluster, ClusterPhase
from tenantplane.cluster.reconciler import ClusterReconciler
from tenantplane.cluster.repository import ClusterRepository
from tenantplane.db.engine import Database
from tenantplane.db.migrate import upgrade
from tenantplane.member.repository import MemberRepository
from tenantplane.providers.orchestrator.simulator import SimulatorOrchestrator
from tenantplane.reconcile.runner import ReconcilerRunner
from tests.backends import postgres_database
from tests.conftest import TEST_SECRET, make_settings
from tests.factories import Factory
from tests.http_client import api_client, bearer, running_app

#: Far below the sessions' lock timeout (5 s), far above a look or a create on loopback.
PATIENCE_SECONDS = 3.0


@pytest.fixture
async def postgres(tmp_path: Path) -> AsyncIterator[tuple[Database, httpx.AsyncClient]]:
    with postgres_database("tenantplane_tenant_lock") as url:
        await asyncio.to_thread(upgrade, url)
        database = Database.connect(url)
        settings = make_settings(url, tmp_path, run_reconcilers=False)
        try:
            async with running_app(settings) as app, api_client(app) as client:
                yield database, client
        finally:
            await database.dispose()


async def test_a_create_holding_its_tenant_holds_back_no_reconciler_look(
    postgres: tuple[Database, httpx.AsyncClient],
) -> None:
    database, _ = postgres
    [cluster_id] = await Factory(database, TEST_SECRET.encode()).due_clusters(1)
    async with database.sessionmaker() as session:
        tenant_id = (
            await session.execute(select(Cluster.tenant_id).where(Cluster.id == cluster_id))
        ).scalar_one()
    reconciler = ClusterReconciler(
        SimulatorOrchestrator(database, step_seconds=3600),
        load_versions(),
        progress_seconds=3600,
        resync_seconds=3600,
    )
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)
    async with database.transaction() as create:
        assert await ClusterRepository.from_session(create).lock_tenant(tenant_id) is not None
        # A create of the tenant between its lock and its commit.
        leases = await asyncio.wait_for(runner._lease_and_act(64), PATIENCE_SECONDS)
    assert [lease.row_id for lease in leases] == [cluster_id]
    async with database.sessionmaker() as session:
        phase = (
            await session.execute(select(Cluster.phase).where(Cluster.id == cluster_id))
        ).scalar_one()
    assert phase == ClusterPhase.provisioning.value


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
