"""The cluster reconciler works the rows of a fetch as one batch when its orchestrator takes
many calls at once, and one row at a time otherwise; with the simulator, whose state is in
this database, a batch is loaded, acted on and applied in one transaction."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.catalogue.versions import load_versions
from tenantplane.cluster.models import Cluster, ClusterPhase
from tenantplane.cluster.reconciler import ClusterReconciler, ClusterWork
from tenantplane.db.base import utcnow
from tenantplane.db.engine import Database
from tenantplane.providers.orchestrator import ClusterSpec, Observation, Orchestrator
from tenantplane.providers.orchestrator.simulator import SimulatorOrchestrator
from tenantplane.providers.orchestrator.simulator_models import SimulatedCluster
from tenantplane.reconcile.fence import WriteFence
from tenantplane.reconcile.runner import ReconcilerRunner
from tests.factories import Factory, fence_of
from tests.statements import statements_sent


class OneByOne:
    """An orchestrator that takes one call at a time (as a remote one does)."""

    def __init__(self, inner: SimulatorOrchestrator) -> None:
        self.inner = inner

    async def apply(self, spec: ClusterSpec, fence: WriteFence) -> Observation:
        return await self.inner.apply(spec, fence)

    async def delete(self, spec: ClusterSpec, fence: WriteFence) -> Observation:
        return await self.inner.delete(spec, fence)


class ManyAtOnce(OneByOne):
    """An orchestrator that takes many calls at once but keeps its state elsewhere (its calls
    are not made in the reconciler's transaction)."""

    async def act_many(self, calls: Sequence[tuple[ClusterSpec, bool]]) -> list[Observation]:
        return await self.inner.act_many(calls)


class FailingWrite(ClusterReconciler):
    """Fails after the simulator's calls, as the write of the batch's statuses could."""

    async def _write(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the batch's statuses could not be written")


@contextmanager
def checkouts(database: Database) -> Iterator[list[object]]:
    """The connections taken from ``database``'s pool while the block runs (one per
    session that sends anything: a transaction, or an autocommit statement)."""
    taken: list[object] = []

    def record(connection: object, *_: object) -> None:
        taken.append(connection)

    pool = database.engine.sync_engine.pool
    event.listen(pool, "checkout", record)
    try:
        yield taken
    finally:
        event.remove(pool, "checkout", record)


class RecordingLoads(ClusterReconciler):
    """Records whether each ``load`` reads on a driver connection in autocommit."""

    autocommit: list[bool]

    async def load(self, session: AsyncSession, row_id: Any) -> ClusterWork | None:
        raw = await (await session.connection()).get_raw_connection()
        self.autocommit.append(bool(getattr(raw.driver_connection, "autocommit", False)))
        return await super().load(session, row_id)


def reconciler_of(orchestrator: Orchestrator) -> ClusterReconciler:
    return ClusterReconciler(
        orchestrator, load_versions(), progress_seconds=3600, resync_seconds=3600
    )


async def phases(database: Database, ids: list[int]) -> dict[int, str]:
    async with database.transaction() as session:
        rows = await session.execute(select(Cluster.id, Cluster.phase).where(Cluster.id.in_(ids)))
        return {row_id: phase for row_id, phase in rows}


async def test_clusters_due_together_are_provisioned_in_one_transaction(
    database: Database, factory: Factory
) -> None:
    ids = await factory.due_clusters(6)
    reconciler = reconciler_of(SimulatorOrchestrator(database, step_seconds=3600))
    assert reconciler.batched
    assert reconciler.acts_in_apply
    assert reconciler.concurrency == 64  # the batch size, not the single-call concurrency
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)
    with statements_sent(database.engine) as sent, checkouts(database) as taken:
        assert await runner.run_once() == 6
    assert set((await phases(database, ids)).values()) == {ClusterPhase.provisioning.value}
    # The lease fetch, the batch's one transaction (load, simulator, statuses), and the
    # fetch that finds nothing left: not a transaction each for the load, the simulator's
    # calls and the apply.
    assert len(taken) == 3, sent
    simulator_reads = [s for s in sent if s.startswith("SELECT") and "FROM SIMULATOR_CLUSTERS" in s]
    # One read of the batch's deployments; the new ones inserted together by one statement
    # that returns them (no read back).
    assert len(simulator_reads) == 1, simulator_reads
    inserts = [s for s in sent if s.startswith("INSERT INTO SIMULATOR_CLUSTERS")]
    assert len(inserts) == 1, inserts
    assert "RETURNING" in inserts[0], inserts
    # The batch read with its tenants under its leases (and locked) in one statement.
    reads = [s for s in sent if "FROM CLUSTERS LEFT OUTER JOIN TENANTS" in s]
    assert len(reads) == 1, reads
    if database.is_sqlite:
        assert "(CLUSTERS.ID, CLUSTERS.LOCK_TOKEN) IN" in reads[0]
    else:
        # The ids as one array (each looked up in the primary key), each one's token from
        # one JSON object: the same text for any number of rows.
        assert "CLUSTERS.ID = ANY (" in reads[0], reads[0]
        assert "CLUSTERS.LOCK_TOKEN = JSON_EXTRACT_PATH_TEXT(" in reads[0], reads[0]
        assert reads[0].endswith("FOR UPDATE OF CLUSTERS"), reads[0]
    # Every row's status in one statement, each row under its own lease.
    status_writes = [s for s in sent if s.startswith("UPDATE CLUSTERS AS T")]
    assert len(status_writes) == 1, status_writes


async def test_a_look_on_sqlite_leases_and_works_its_batch_in_one_transaction(
    database: Database, factory: Factory
) -> None:
    """The runner's look (``ReconcilerRunner.run``): on SQLite one turn of the write lock,
    not one for the lease and one for the batch; on PostgreSQL the lease is committed
    first (an autocommit statement), then the batch's transaction."""
    ids = await factory.due_clusters(4)
    reconciler = reconciler_of(SimulatorOrchestrator(database, step_seconds=3600))
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)
    with statements_sent(database.engine) as sent, checkouts(database) as taken:
        leases = await runner._lease_and_act(64)
    assert sorted(lease.row_id for lease in leases) == sorted(ids)
    if database.is_sqlite:
        assert len(taken) == 1, sent
        assert sent.count("BEGIN IMMEDIATE") == 1, sent
    else:
        assert len(taken) == 2, sent
    async with database.reader() as session:
        rows = (
            await session.execute(
                select(Cluster.phase, Cluster.lock_token).where(Cluster.id.in_(ids))
            )
        ).all()
    assert set(rows) == {(ClusterPhase.provisioning.value, None)}


async def _run_once(runner: ReconcilerRunner) -> int:
    return await runner.run_once()


async def _look(runner: ReconcilerRunner) -> int:
    return len(await runner._lease_and_act(64))


@pytest.mark.parametrize("work", [_run_once, _look])
async def test_a_batch_that_fails_after_the_simulators_calls_takes_them_back(
    database: Database, factory: Factory, work: Callable[[ReconcilerRunner], Awaitable[int]]
) -> None:
    """Through a lease of its own (``run_once``) or a look (``run``; on SQLite in one
    transaction: the rollback takes the lease back too, and the rows back off unleased)."""
    ids = await factory.due_clusters(3)
    simulator = SimulatorOrchestrator(database, step_seconds=3600)
    reconciler = FailingWrite(
        simulator, load_versions(), progress_seconds=3600, resync_seconds=3600
    )
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)
    assert await work(runner) == 3
    # Nothing provisioned that the clusters' statuses do not record: every row backed off.
    async with database.transaction() as session:
        deployments = (await session.execute(select(func.count(SimulatedCluster.uid)))).scalar()
        rows = (
            await session.execute(
                select(Cluster.phase, Cluster.lock_token, Cluster.reconcile_at > func.now()).where(
                    Cluster.id.in_(ids)
                )
            )
        ).all()
    assert deployments == 0
    assert set(rows) == {(ClusterPhase.pending.value, None, True)}


async def test_a_row_of_a_batch_whose_lease_was_lost_is_not_provisioned(
    database: Database, factory: Factory
) -> None:
    ids = await factory.due_clusters(3)
    simulator = SimulatorOrchestrator(database, step_seconds=3600)
    reconciler = reconciler_of(simulator)
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)
    leases = await runner.fetcher.lease(3, timedelta(seconds=30))
    lost = leases[0]
    async with database.transaction() as session:
        # Another worker took this row over meanwhile.
        await session.execute(
            update(Cluster).where(Cluster.id == lost.row_id).values(lock_token="someone-else")
        )
    async with database.transaction() as session:
        await reconciler.act_and_apply_batch(session, [lease.guard(session) for lease in leases])
    shown = await phases(database, ids)
    assert shown[lost.row_id] == ClusterPhase.pending.value
    assert {shown[lease.row_id] for lease in leases[1:]} == {ClusterPhase.provisioning.value}
    async with database.transaction() as session:
        provisioned = set((await session.execute(select(SimulatedCluster.name))).scalars())
        names = {
            row_id: name for row_id, name in await session.execute(select(Cluster.id, Cluster.name))
        }
    assert provisioned == {names[lease.row_id] for lease in leases[1:]}


async def test_a_row_of_a_batch_whose_lease_was_lost_is_not_written(
    database: Database, factory: Factory
) -> None:
    ids = await factory.due_clusters(3)
    reconciler = reconciler_of(ManyAtOnce(SimulatorOrchestrator(database, step_seconds=3600)))
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)
    leases = await runner.fetcher.lease(3, timedelta(seconds=30))
    assert sorted(lease.row_id for lease in leases) == sorted(ids)
    async with database.transaction() as session:
        loaded = await reconciler.load_batch(session, ids)
    snapshots = {row_id: work for row_id, work in loaded.items() if work is not None}
    outcomes = [
        outcome
        for outcome in await reconciler.act_batch(
            [snapshots[lease.row_id] for lease in leases],
            [fence_of(database, lease) for lease in leases],
        )
        if isinstance(outcome, Observation)
    ]
    lost = leases[0]
    async with database.transaction() as session:
        # Another worker took this row over meanwhile.
        await session.execute(
            update(Cluster).where(Cluster.id == lost.row_id).values(lock_token="someone-else")
        )
    async with database.transaction() as session:
        await reconciler.apply_batch(
            session,
            [
                (lease.guard(session), snapshots[lease.row_id], outcome)
                for lease, outcome in zip(leases, outcomes, strict=True)
            ],
        )
    shown = await phases(database, ids)
    assert shown[lost.row_id] == ClusterPhase.pending.value
    assert {shown[lease.row_id] for lease in leases[1:]} == {ClusterPhase.provisioning.value}


async def test_an_orchestrator_of_single_calls_is_called_one_row_at_a_time(
    database: Database, factory: Factory
) -> None:
    ids = await factory.due_clusters(3)
    orchestrator = OneByOne(SimulatorOrchestrator(database, step_seconds=3600))
    reconciler = RecordingLoads(
        orchestrator, load_versions(), progress_seconds=3600, resync_seconds=3600
    )
    reconciler.autocommit = []
    assert not reconciler.batched
    assert reconciler.concurrency == 16
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)
    assert await runner.run_once() == 3
    assert set((await phases(database, ids)).values()) == {ClusterPhase.provisioning.value}
    # On PostgreSQL the load is one read in autocommit: no BEGIN and COMMIT around it.
    assert reconciler.autocommit == [not database.is_sqlite] * 3


async def test_an_orchestrator_of_many_calls_elsewhere_is_called_with_no_session_open(
    database: Database, factory: Factory
) -> None:
    ids = await factory.due_clusters(3)
    reconciler = reconciler_of(ManyAtOnce(SimulatorOrchestrator(database, step_seconds=3600)))
    assert reconciler.batched
    assert not reconciler.acts_in_apply
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)
    with checkouts(database) as taken:
        assert await runner.run_once() == 3
    assert set((await phases(database, ids)).values()) == {ClusterPhase.provisioning.value}
    # The fetch, the load, the leases held for the call (one statement), the orchestrator's
    # own transaction, the apply, the last fetch.
    assert len(taken) == 6


async def test_a_batch_of_different_changes_writes_each_table_in_one_statement(
    database: Database, factory: Factory
) -> None:
    """A deletion, a spec change and a simulated step in one batch change different
    columns of the deployments and of the statuses: each table is still written once, and
    a cluster of the batch whose status did not change keeps its resource version (ETag)."""
    deleted, resized, stepped, unchanged = ids = await factory.due_clusters(4)
    simulator = SimulatorOrchestrator(database, step_seconds=3600)
    runner = ReconcilerRunner(database, reconciler_of(simulator), idle_poll_seconds=3600)
    assert await runner.run_once() == 4  # provisioned: etcd starting, next step in an hour
    now = utcnow()
    async with database.transaction() as session:
        await session.execute(
            update(Cluster)
            .where(Cluster.id == deleted)
            .values(deletion_requested_at=now, reconcile_at=now)
        )
        await session.execute(
            update(Cluster)
            .where(Cluster.id == resized)
            .values(cpu="2", generation=Cluster.generation + 1, reconcile_at=now)
        )
        await session.execute(
            update(Cluster).where(Cluster.id.in_([stepped, unchanged])).values(reconcile_at=now)
        )
        version = (
            await session.execute(select(Cluster.resource_version).where(Cluster.id == unchanged))
        ).scalar()
        uid = (await session.execute(select(Cluster.uid).where(Cluster.id == stepped))).scalar()
        await session.execute(
            update(SimulatedCluster)
            .where(SimulatedCluster.uid == uid)
            .values(last_step_at=now - timedelta(hours=1))
        )
    with statements_sent(database.engine) as sent:
        assert await runner.run_once() == 4
    deployment_writes = [s for s in sent if s.startswith("UPDATE SIMULATOR_CLUSTERS")]
    assert len(deployment_writes) == 1, deployment_writes
    if not database.is_sqlite:
        status_writes = [s for s in sent if s.startswith("UPDATE CLUSTERS AS T")]
        assert len(status_writes) == 1, status_writes
    async with database.transaction() as session:
        deployments = {
            row.uid: row for row in (await session.execute(select(SimulatedCluster))).scalars()
        }
        clusters = {
            row.id: row
            for row in (await session.execute(select(Cluster).where(Cluster.id.in_(ids)))).scalars()
        }
    assert deployments[clusters[deleted].uid].stage == "deleting"
    assert deployments[clusters[resized].uid].cpu == "2"
    assert deployments[clusters[stepped].uid].etcd_up == 1
    assert clusters[deleted].phase == ClusterPhase.terminating.value
    assert clusters[resized].observed_generation == clusters[resized].generation
    assert clusters[stepped].phase == ClusterPhase.provisioning.value
    assert clusters[unchanged].resource_version == version
