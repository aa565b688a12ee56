"""The reconciler framework on its own: leases, guarded apply, hints, bounded concurrency.

A trivial reconciler drives rows of the clusters table (any table with the Leased columns
would do) so that the framework is shown apart from the cluster feature's logic.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, ClassVar

import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.schema import Table

from tenantplane.cluster.models import Cluster
from tenantplane.db.base import utcnow
from tenantplane.db.engine import Database
from tenantplane.reconcile import LeaseGuard, Reconciler, ReconcilerRunner, wake_after_commit
from tenantplane.reconcile.fence import Fence
from tenantplane.reconcile.fetcher import Fetcher
from tenantplane.reconcile.metrics import ReconcileMetrics
from tests.factories import Factory

DEADLINE_SECONDS = 60


@dataclass
class Seen:
    row_id: int
    generation: int


class CountingReconciler(Reconciler[Seen, int]):
    """Marks each row converged after recording that it acted on it."""

    name: ClassVar[str] = "test-counting"
    table: ClassVar[Table] = Cluster.__table__  # type: ignore[assignment]

    def __init__(self, concurrency: int = 4) -> None:
        self.concurrency = concurrency
        self.acted: list[int] = []
        self.running = 0
        self.max_running = 0

    async def load(self, session: AsyncSession, row_id: Any) -> Seen | None:
        cluster = await session.get(Cluster, row_id)
        return None if cluster is None else Seen(cluster.id, cluster.generation)

    async def act(self, snapshot: Seen, fence: Fence) -> int:
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        await asyncio.sleep(0.01)
        self.running -= 1
        self.acted.append(snapshot.row_id)
        return snapshot.generation

    async def apply(
        self, session: AsyncSession, guard: LeaseGuard, snapshot: Seen, outcome: int
    ) -> None:
        await guard.update(observed_generation=outcome, reconcile_at=None)


async def add_rows(
    database: Database, tenant_id: int, count: int, *, due: bool, prefix: str = "c"
) -> list[int]:
    async with database.transaction() as session:
        rows = [
            Cluster(
                uid=uuid.uuid4().hex,
                tenant_id=tenant_id,
                name=f"{prefix}-{index}",
                version="1.33",
                cpu="1",
                memory="1Gi",
                storage="1Gi",
                cpu_millicores=1000,
                memory_bytes=2**30,
                storage_bytes=2**30,
                reconcile_at=utcnow() if due else None,
            )
            for index in range(count)
        ]
        session.add_all(rows)
        await session.flush()
        return [row.id for row in rows]


async def wait_until(condition: Any, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + DEADLINE_SECONDS
    while not await condition():
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail(f"gave up after {DEADLINE_SECONDS}s waiting for {what}")
        await asyncio.sleep(0.02)


async def observed(database: Database) -> dict[int, int]:
    async with database.sessionmaker() as session:
        rows = await session.execute(select(Cluster.id, Cluster.observed_generation))
        return {row_id: generation for row_id, generation in rows.all()}


async def test_every_due_row_is_reconciled_once_within_the_concurrency_bound(
    database: Database, factory: Factory
) -> None:
    tenant = await factory.tenant()
    ids = await add_rows(database, tenant.id, 30, due=True)
    reconciler = CountingReconciler(concurrency=4)
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=30)
    task = asyncio.create_task(runner.run())
    try:

        async def all_done() -> bool:
            return all(value == 1 for value in (await observed(database)).values())

        await wait_until(all_done, "every row reconciled")
    finally:
        runner.stop()
        await task
    assert sorted(reconciler.acted) == sorted(ids)
    assert reconciler.max_running <= 4


async def test_a_hint_after_commit_wakes_an_idle_runner(
    database: Database, factory: Factory
) -> None:
    tenant = await factory.tenant()
    [row_id] = await add_rows(database, tenant.id, 1, due=False)
    reconciler = CountingReconciler()
    # The idle poll is far longer than the deadline: only the hint can wake the runner.
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)
    task = asyncio.create_task(runner.run())
    try:
        # Idle: it has looked, found nothing due, and will not look again for an hour.
        await asyncio.wait_for(runner.idle.wait(), DEADLINE_SECONDS)
        assert reconciler.acted == []
        async with database.transaction() as session:
            cluster = await session.get(Cluster, row_id)
            assert cluster is not None
            cluster.reconcile_at = utcnow()
            wake_after_commit(session, reconciler.name)

        async def done() -> bool:
            return (await observed(database))[row_id] == 1

        await wait_until(done, "the woken runner")
    finally:
        runner.stop()
        await task


async def test_a_lost_lease_discards_the_result(database: Database, factory: Factory) -> None:
    tenant = await factory.tenant()
    [row_id] = await add_rows(database, tenant.id, 1, due=True)
    first = Fetcher(database, Cluster.__table__, "first")  # type: ignore[arg-type]
    second = Fetcher(database, Cluster.__table__, "second")  # type: ignore[arg-type]
    [stale] = await first.lease(10, timedelta(seconds=-1))  # already expired
    assert await second.lease(10, timedelta(seconds=60)) != []
    # A live lease is never handed out twice.
    assert await first.lease(10, timedelta(seconds=60)) == []
    async with database.transaction() as session:
        assert await stale.guard(session).update(observed_generation=99) is False
    assert (await observed(database))[row_id] == 0


async def test_a_back_off_after_a_rollback_leaves_another_workers_lease_alone(
    database: Database, factory: Factory
) -> None:
    """Rows leased in a transaction that rolled back back off unleased; a row another
    worker leased since keeps that lease and its due time."""
    tenant = await factory.tenant()
    free, taken = await add_rows(database, tenant.id, 2, due=True)
    other = Fetcher(database, Cluster.__table__, "other")  # type: ignore[arg-type]
    ours = Fetcher(database, Cluster.__table__, "ours")  # type: ignore[arg-type]
    async with database.transaction() as session:
        await session.execute(update(Cluster).where(Cluster.id == free).values(reconcile_at=None))
    [lease] = await other.lease(10, timedelta(seconds=60))
    assert lease.row_id == taken
    async with database.transaction() as session:
        await session.execute(
            update(Cluster).where(Cluster.id == free).values(reconcile_at=utcnow())
        )
    async with database.reader() as session:
        before = (
            await session.execute(select(Cluster.reconcile_at).where(Cluster.id == taken))
        ).scalar_one()
    await ours.back_off_unheld([free, taken], 30)
    async with database.reader() as session:
        rows = {
            row_id: (owner, due)
            for row_id, owner, due in await session.execute(
                select(Cluster.id, Cluster.lock_owner, Cluster.reconcile_at)
            )
        }
    assert rows[taken] == ("other", before)
    owner, due = rows[free]
    assert owner is None
    assert due is not None
    assert due > utcnow() + timedelta(seconds=20)


async def test_the_next_due_query_waits_for_no_writer(database: Database, factory: Factory) -> None:
    """A runner asks when its next row is due between looks: a read, which on SQLite takes
    no turn of the write lock (it would wait behind every queued writer)."""
    tenant = await factory.tenant()
    [row_id] = await add_rows(database, tenant.id, 1, due=False)
    fetcher = Fetcher(database, Cluster.__table__, "reader")  # type: ignore[arg-type]
    async with database.transaction() as session:
        later = utcnow() + timedelta(seconds=60)
        await session.execute(
            update(Cluster).where(Cluster.id == row_id).values(reconcile_at=later)
        )
    async with database.transaction() as writing:
        await writing.execute(update(Cluster).where(Cluster.id == row_id).values(generation=2))
        due = await asyncio.wait_for(fetcher.seconds_until_due(), 3)
    assert due is not None
    assert 50 < due <= 60


async def test_two_workers_share_the_rows_without_doing_any_twice(
    database: Database, factory: Factory
) -> None:
    tenant = await factory.tenant()
    ids = await add_rows(database, tenant.id, 60, due=True)
    first, second = CountingReconciler(concurrency=3), CountingReconciler(concurrency=3)
    runners = [
        ReconcilerRunner(database, reconciler, owner=owner, idle_poll_seconds=30)
        for reconciler, owner in ((first, "worker-a"), (second, "worker-b"))
    ]
    tasks = [asyncio.create_task(runner.run()) for runner in runners]
    try:

        async def all_done() -> bool:
            return all(value == 1 for value in (await observed(database)).values())

        await wait_until(all_done, "every row reconciled by the pair")
    finally:
        for runner in runners:
            runner.stop()
        await asyncio.gather(*tasks)
    assert sorted(first.acted + second.acted) == sorted(ids)


class FailingOnceReconciler(CountingReconciler):
    """Raises in ``act`` the first time it sees ``row_id``; retried soon after."""

    error_backoff_seconds = 0.05

    def __init__(self, row_id: int) -> None:
        super().__init__()
        self.fail_on: int | None = row_id

    async def act(self, snapshot: Seen, fence: Fence) -> int:
        if snapshot.row_id == self.fail_on:
            self.fail_on = None
            raise RuntimeError("the outside world said no")
        return await super().act(snapshot, fence)


def sample(metrics: ReconcileMetrics, name: str, reconciler: str) -> float:
    value = metrics.registry.get_sample_value(name, {"reconciler": reconciler})
    assert value is not None, name
    return value


async def test_metrics_count_steps_failures_and_takeovers_of_expired_leases(
    database: Database, factory: Factory
) -> None:
    tenant = await factory.tenant()
    fresh = await add_rows(database, tenant.id, 2, due=True)
    abandoned = await add_rows(database, tenant.id, 3, due=True, prefix="abandoned")
    # Leases of a process that died: expired, its owner still written on the rows.
    dead = Fetcher(database, Cluster.__table__, "dead-worker")  # type: ignore[arg-type]
    assert len(await dead.lease(10, timedelta(seconds=-1))) == 5
    async with database.transaction() as session:
        await session.execute(
            update(Cluster)
            .where(Cluster.id.in_(fresh))
            .values(lock_owner=None, lock_token=None, lock_expires_at=None)
        )
    reconciler = FailingOnceReconciler(fresh[0])
    metrics = ReconcileMetrics()
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=0.05, metrics=metrics)
    name = reconciler.name
    await runner.refresh_metrics()
    assert sample(metrics, "tenantplane_reconcile_queue_depth", name) == 5
    task = asyncio.create_task(runner.run())
    try:

        async def all_done() -> bool:
            return all(value == 1 for value in (await observed(database)).values())

        await wait_until(all_done, "every row reconciled")
    finally:
        runner.stop()
        await task
    await runner.refresh_metrics()
    assert sorted(reconciler.acted) == sorted(fresh + abandoned)
    assert sample(metrics, "tenantplane_reconcile_steps_total", name) == 6  # one retried
    assert sample(metrics, "tenantplane_reconcile_failures_total", name) == 1
    assert sample(metrics, "tenantplane_reconcile_lease_takeovers_total", name) == 3
    assert sample(metrics, "tenantplane_reconcile_step_duration_seconds_count", name) == 6
    assert sample(metrics, "tenantplane_reconcile_queue_depth", name) == 0
    assert sample(metrics, "tenantplane_reconcile_rows_in_progress", name) == 0
