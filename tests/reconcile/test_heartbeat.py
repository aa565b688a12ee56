"""Leases live as long as the work: a step that runs longer than its lease keeps the row
(the heartbeat renews it), and no other worker takes it meanwhile."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timedelta
from typing import Any, ClassVar

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.schema import Table

from tenantplane.cluster.models import Cluster
from tenantplane.db.clock import database_now
from tenantplane.db.engine import Database
from tenantplane.reconcile import LeaseGuard, Reconciler, ReconcilerRunner
from tenantplane.reconcile.fence import Fence
from tenantplane.reconcile.fetcher import Fetcher
from tests.factories import Factory

DEADLINE_SECONDS = 60.0
LEASE_SECONDS = 1.5


class SlowReconciler(Reconciler[int, int]):
    """``act`` runs until the test lets it finish."""

    name: ClassVar[str] = "test-slow"
    table: ClassVar[Table] = Cluster.__table__  # type: ignore[assignment]
    lease_seconds = LEASE_SECONDS

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.finish = asyncio.Event()

    async def load(self, session: AsyncSession, row_id: Any) -> int | None:
        return int(row_id)

    async def act(self, snapshot: int, fence: Fence) -> int:
        self.started.set()
        await self.finish.wait()
        return 7

    async def apply(
        self, session: AsyncSession, guard: LeaseGuard, snapshot: int, outcome: int
    ) -> None:
        await guard.update(observed_generation=outcome, reconcile_at=None)


async def _row(database: Database, factory: Factory) -> int:
    tenant = await factory.tenant()
    async with database.transaction() as session:
        cluster = Cluster(
            uid=uuid.uuid4().hex,
            tenant_id=tenant.id,
            name="slow",
            version="1.33",
            cpu="1",
            memory="1Gi",
            storage="1Gi",
            cpu_millicores=1000,
            memory_bytes=2**30,
            storage_bytes=2**30,
            reconcile_at=await database_now(session),
        )
        session.add(cluster)
        await session.flush()
        return cluster.id


async def _lease_row(database: Database, row_id: int) -> tuple[datetime | None, int, datetime]:
    async with database.sessionmaker() as session:
        row = (
            await session.execute(
                select(Cluster.lock_expires_at, Cluster.observed_generation).where(
                    Cluster.id == row_id
                )
            )
        ).one()
        return row[0], row[1], await database_now(session)


async def _until(condition: Any, what: str) -> None:
    loop = asyncio.get_running_loop()
    give_up = loop.time() + DEADLINE_SECONDS
    while not await condition():
        if loop.time() > give_up:
            pytest.fail(f"gave up waiting for {what}")
        await asyncio.sleep(0.05)


async def test_a_step_longer_than_its_lease_keeps_the_row(
    database: Database, factory: Factory
) -> None:
    row_id = await _row(database, factory)
    reconciler = SlowReconciler()
    runner = ReconcilerRunner(database, reconciler, owner="slow-worker", idle_poll_seconds=30)
    task = asyncio.create_task(runner.run())
    other = Fetcher(database, Cluster.__table__, "other-worker")  # type: ignore[arg-type]
    try:
        await reconciler.started.wait()
        first_expiry, _, _ = await _lease_row(database, row_id)
        assert first_expiry is not None

        async def past_the_first_expiry() -> bool:
            _, _, now = await _lease_row(database, row_id)
            return now > first_expiry + timedelta(seconds=LEASE_SECONDS)

        # The database's clock is now well past the lease taken at the start of the step.
        await _until(past_the_first_expiry, "time to pass the first lease's expiry")
        renewed, generation, now = await _lease_row(database, row_id)
        assert renewed is not None
        assert renewed > now  # still live: renewed meanwhile
        assert await other.lease(10, timedelta(seconds=30)) == []
        assert generation == 0
        reconciler.finish.set()

        async def applied() -> bool:
            return (await _lease_row(database, row_id))[1] == 7

        await _until(applied, "the slow step's result")
    finally:
        reconciler.finish.set()
        runner.stop()
        await task
    expiry, _, _ = await _lease_row(database, row_id)
    assert expiry is None  # applying ended the lease
