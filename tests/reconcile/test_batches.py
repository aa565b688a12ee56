"""Batched reconcilers (``Reconciler.batched``) and the writes they share a statement for:
``update_each`` honours each row's own lease and expected values, a batch's rows fail and
lose leases one by one, and hints arriving together are taken by one fetch (coalescing)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, ClassVar

import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.cluster.models import Cluster
from tenantplane.db.base import utcnow
from tenantplane.db.engine import Database
from tenantplane.reconcile import ReconcilerRunner
from tenantplane.reconcile import runner as runner_module
from tenantplane.reconcile.fence import Fence
from tenantplane.reconcile.fetcher import Fetcher
from tenantplane.reconcile.hints import wake_after_commit
from tenantplane.reconcile.lease import UNKNOWN, GuardedWrite, update_each
from tests.factories import Factory
from tests.reconcile.test_framework import CountingReconciler, Seen, add_rows, wait_until

CLUSTERS = Cluster.__table__


class BatchedReconciler(CountingReconciler):
    """``CountingReconciler`` worked a fetch at a time; records the size of each batch."""

    name: ClassVar[str] = "test-batched"
    batched = True
    single_statements: ClassVar[bool] = True

    def __init__(self, concurrency: int = 4, failing: set[int] | None = None) -> None:
        super().__init__(concurrency)
        self.batches: list[int] = []
        self.failing = failing or set()

    async def load_batch(self, session: AsyncSession, row_ids: Any) -> dict[Any, Seen | None]:
        self.batches.append(len(row_ids))
        return await super().load_batch(session, row_ids)

    async def act(self, snapshot: Seen, fence: Fence) -> int:
        if snapshot.row_id in self.failing:
            raise RuntimeError("act failed")
        return await super().act(snapshot, fence)

    async def apply_batch(self, session: AsyncSession, batch: Any) -> None:
        writes = [
            GuardedWrite(guard.lease, {"observed_generation": outcome, "reconcile_at": None})
            for guard, _, outcome in batch
        ]
        await update_each(session, writes)


async def _rows(database: Database) -> dict[int, tuple[int, str | None, Any]]:
    async with database.sessionmaker() as session:
        result = await session.execute(
            select(
                Cluster.id, Cluster.observed_generation, Cluster.lock_token, Cluster.reconcile_at
            )
        )
        return {row_id: (observed, token, due) for row_id, observed, token, due in result.all()}


def assert_backed_off(row: tuple[int, str | None, Any]) -> None:
    """Not applied, its lease ended, due again after the backoff (an hour in these tests)."""
    observed, token, due = row
    assert (observed, token) == (0, None)
    assert due is not None
    assert due > utcnow() + timedelta(minutes=30)


async def test_update_each_writes_only_the_rows_still_held_and_still_as_expected(
    database: Database, factory: Factory
) -> None:
    tenant = await factory.tenant()
    kept, stolen, changed = await add_rows(database, tenant.id, 3, due=True, prefix="each")
    mine = Fetcher(database, CLUSTERS, "mine")  # type: ignore[arg-type]
    leases = {lease.row_id: lease for lease in await mine.lease(10, timedelta(seconds=30))}
    assert set(leases) == {kept, stolen, changed}
    # Another worker takes one row over (as after an expiry) …
    async with database.transaction() as session:
        await session.execute(
            update(Cluster).where(Cluster.id == stolen).values(lock_token="someone-else")
        )
        # … and desired state changes on another (its generation is bumped).
        await session.execute(
            update(Cluster).where(Cluster.id == changed).values(generation=Cluster.generation + 1)
        )
    later = utcnow() + timedelta(hours=1)
    async with database.statements() as session:
        written = await update_each(
            session,
            [
                GuardedWrite(
                    leases[row_id],
                    {"observed_generation": 1, "reconcile_at": later},
                    expect={"generation": 1},
                    increment={"resource_version": 1},
                )
                for row_id in (kept, stolen, changed)
            ],
        )
    assert written == {kept}
    rows = await _rows(database)
    assert rows[kept][:2] == (1, None)  # written, lease ended
    assert rows[kept][2] == later
    assert rows[stolen][:2] == (0, "someone-else")  # not ours: untouched
    assert rows[changed][:2] == (0, leases[changed].token)  # still held, not written
    assert leases[kept].next_step() == later
    assert leases[stolen].next_step() is UNKNOWN
    async with database.sessionmaker() as session:
        versions = dict((await session.execute(select(Cluster.id, Cluster.resource_version))).all())
    assert versions[kept] == versions[stolen] + 1

    # The row whose generation changed is written under its lease alone.
    async with database.statements() as session:
        assert await update_each(session, [GuardedWrite(leases[changed], {})]) == {changed}
    assert (await _rows(database))[changed][1] is None


async def test_update_each_stores_every_kind_of_value_as_the_orm_would(
    database: Database, factory: Factory
) -> None:
    """Times, JSON documents, booleans, text and NULL travel in the one JSON parameter and
    are stored as their columns store them; an expected NULL matches a NULL."""
    tenant = await factory.tenant()
    ids = await add_rows(database, tenant.id, 2, due=True, prefix="kinds")
    mine = Fetcher(database, CLUSTERS, "mine")  # type: ignore[arg-type]
    leases = await mine.lease(10, timedelta(seconds=30))
    at = utcnow().replace(microsecond=123456) + timedelta(minutes=5)
    conditions = [{"type": "Ready", "status": "True", "message": '"quoted" ✓'}]
    values: dict[str, Any] = {
        "conditions": conditions,
        "ha_configured": True,
        "ha_enabled_at": at,
        "endpoint": "https://api.example.test:6443",
        "reconcile_at": None,
    }
    async with database.transaction() as session:
        written = await update_each(
            session,
            [
                GuardedWrite(lease, values, expect={"deletion_requested_at": None})
                for lease in leases
            ],
        )
    assert written == set(ids)
    async with database.reader() as session:
        clusters = (await session.execute(select(Cluster).where(Cluster.id.in_(ids)))).scalars()
        for cluster in clusters:
            assert cluster.conditions == conditions
            assert cluster.ha_configured is True
            assert cluster.ha_enabled_at == at
            assert cluster.endpoint == "https://api.example.test:6443"
            assert cluster.reconcile_at is None
            assert cluster.lock_token is None


async def test_every_row_of_a_batch_is_reconciled_once_and_a_failing_act_backs_off_its_own(
    database: Database, factory: Factory
) -> None:
    tenant = await factory.tenant()
    ids = await add_rows(database, tenant.id, 10, due=True, prefix="batch")
    failing = ids[3]
    reconciler = BatchedReconciler(concurrency=4, failing={failing})
    reconciler.error_backoff_seconds = 3600
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=30)
    task = asyncio.create_task(runner.run())
    try:

        async def all_done() -> bool:
            rows = await _rows(database)
            return all(rows[row_id][0] == 1 for row_id in ids if row_id != failing)

        await wait_until(all_done, "every row but the failing one reconciled")
    finally:
        runner.stop()
        await task
    assert sorted(reconciler.acted) == sorted(row_id for row_id in ids if row_id != failing)
    assert max(reconciler.batches) <= 4
    # Backed off alone.
    assert_backed_off((await _rows(database))[failing])
    assert runner.metrics.failures.labels(reconciler.name)._value.get() == 1


class BatchCallFailing(BatchedReconciler):
    """Acts on a whole batch in one call (``act_batch``), and that call fails."""

    async def act_batch(self, snapshots: Any, fences: Any) -> list[int | BaseException]:
        raise RuntimeError("the batch's call failed")


async def test_a_failing_call_for_the_whole_batch_backs_off_every_row_of_it(
    database: Database, factory: Factory
) -> None:
    tenant = await factory.tenant()
    ids = await add_rows(database, tenant.id, 3, due=True, prefix="whole")
    reconciler = BatchCallFailing(concurrency=4)
    reconciler.error_backoff_seconds = 3600
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=30)
    assert await runner.run_once() == 3
    rows = await _rows(database)
    for row_id in ids:
        assert_backed_off(rows[row_id])
    assert runner.metrics.failures.labels(reconciler.name)._value.get() == 3


async def test_a_batch_longer_than_its_lease_keeps_its_rows(
    database: Database, factory: Factory
) -> None:
    tenant = await factory.tenant()
    ids = await add_rows(database, tenant.id, 3, due=True, prefix="slow")
    reconciler = BatchedReconciler(concurrency=4)
    reconciler.lease_seconds = 1.5
    release = asyncio.Event()
    act = reconciler.act

    async def slow(snapshot: Seen, fence: Fence) -> int:
        await release.wait()
        return await act(snapshot, fence)

    reconciler.act = slow  # type: ignore[method-assign]
    runner = ReconcilerRunner(database, reconciler, owner="slow", idle_poll_seconds=30)
    other = Fetcher(database, CLUSTERS, "other")  # type: ignore[arg-type]
    task = asyncio.create_task(runner.run())
    try:
        await wait_until(lambda: _true(reconciler.batches == [3]), "the batch to start")
        await asyncio.sleep(3 * reconciler.lease_seconds)
        # Renewed meanwhile (one statement for the batch): no other worker takes a row.
        assert await other.lease(10, timedelta(seconds=30)) == []
        release.set()

        await wait_until(lambda: _done(database, ids), "the batch applied")
    finally:
        release.set()
        runner.stop()
        await task


async def _true(value: bool) -> bool:
    return value


async def test_hints_arriving_together_are_taken_by_one_fetch(
    database: Database, factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = await factory.tenant()
    # Rows count as arriving however far apart the test's transactions are, and only as
    # many hints as free slots end the wait: the fetch is not the window's doing.
    monkeypatch.setattr(runner_module, "STREAM_SECONDS", 3600.0)
    reconciler = BatchedReconciler(concurrency=4)
    reconciler.coalesce_seconds = 3600.0
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)
    [first] = await add_rows(database, tenant.id, 1, due=False, prefix="first")
    later = await add_rows(database, tenant.id, 4, due=False, prefix="later")
    task = asyncio.create_task(runner.run())
    try:
        await asyncio.wait_for(runner.idle.wait(), 60)
        # A first row after a quiet spell is fetched at once.
        await _make_due(database, reconciler.name, [first])
        await wait_until(lambda: _done(database, [first]), "the first row")
        await asyncio.wait_for(runner.idle.wait(), 60)
        # Four rows, each in its own transaction with its own hint: the runner waits for
        # the four hints (its free slots), then one fetch takes them all.
        for row_id in later:
            await _make_due(database, reconciler.name, [row_id])
        await wait_until(lambda: _done(database, later), "the later rows")
    finally:
        runner.stop()
        await task
    assert reconciler.batches == [1, 4]


async def test_coalescing_waits_no_longer_than_its_bound(
    database: Database, factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = await factory.tenant()
    monkeypatch.setattr(runner_module, "STREAM_SECONDS", 3600.0)
    reconciler = BatchedReconciler(concurrency=4)
    reconciler.coalesce_seconds = 0.3
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)
    [first, second] = await add_rows(database, tenant.id, 2, due=False, prefix="bound")
    task = asyncio.create_task(runner.run())
    try:
        await asyncio.wait_for(runner.idle.wait(), 60)
        await _make_due(database, reconciler.name, [first])
        await wait_until(lambda: _done(database, [first]), "the first row")
        await asyncio.wait_for(runner.idle.wait(), 60)
        # One hint of the four free slots would end the wait: the bound does.
        started = asyncio.get_running_loop().time()
        await _make_due(database, reconciler.name, [second])
        await wait_until(lambda: _done(database, [second]), "the second row")
        waited = asyncio.get_running_loop().time() - started
    finally:
        runner.stop()
        await task
    assert reconciler.batches == [1, 1]
    assert waited >= 0.3
    assert waited < 30


async def _make_due(
    database: Database, name: str, ids: list[int], *, in_seconds: float = 0.0
) -> None:
    async with database.transaction() as session:
        due = utcnow() + timedelta(seconds=in_seconds)
        await session.execute(update(Cluster).where(Cluster.id.in_(ids)).values(reconcile_at=due))
        wake_after_commit(session, name)


async def _done(database: Database, ids: list[int]) -> bool:
    rows = await _rows(database)
    return all(rows[row_id][0] == 1 for row_id in ids)


class InDatabaseBatches(BatchedReconciler):
    """Acts in its apply (``acts_in_apply``); the first batch waits for ``release`` (its
    rows leased in its transaction). Records each batch's rows and how many batches ran at
    once."""

    acts_in_apply = True

    def __init__(self, concurrency: int) -> None:
        super().__init__(concurrency)
        self.release = asyncio.Event()
        self.worked: list[list[int]] = []
        self.in_flight = 0
        self.most_in_flight = 0

    async def act_and_apply_batch(self, session: AsyncSession, guards: Any) -> None:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            self.worked.append(sorted(guard.lease.row_id for guard in guards))
            if len(self.worked) == 1:
                await self.release.wait()
            await self.apply_batch(session, [(guard, None, 1) for guard in guards])
        finally:
            self.in_flight -= 1


async def test_a_reconciler_acting_in_its_apply_works_one_batch_at_a_time(
    database: Database, factory: Factory
) -> None:
    """Rows due while its batch runs are neither fetched nor worked beside it: the next
    batch takes them all together once it is done, at once (no hint comes for them)."""
    tenant = await factory.tenant()
    reconciler = InDatabaseBatches(concurrency=16)
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)
    [first] = await add_rows(database, tenant.id, 1, due=False, prefix="alone")
    later = await add_rows(database, tenant.id, 3, due=False, prefix="meanwhile")
    # Each due while the first batch runs (the batch's transaction holds SQLite's write
    # lock: nothing is written meanwhile).
    for at, row_id in enumerate(later, start=1):
        await _make_due(database, reconciler.name, [row_id], in_seconds=1.0 + 0.1 * at)
    task = asyncio.create_task(runner.run())
    try:
        await _make_due(database, reconciler.name, [first])
        await wait_until(lambda: _true(len(reconciler.worked) == 1), "the first batch")
        # A second batch beside the first would start within this pause.
        await asyncio.sleep(2)
        assert reconciler.worked == [[first]]
        reconciler.release.set()
        await wait_until(lambda: _done(database, [first, *later]), "every row")
    finally:
        reconciler.release.set()
        runner.stop()
        await task
    assert reconciler.worked == [[first], sorted(later)]
    assert reconciler.most_in_flight == 1
