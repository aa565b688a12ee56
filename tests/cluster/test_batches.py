"""The cluster reconciler works the rows of a fetch as one batch when its orchestrator takes
many calls at once (the simulator), and one row at a time otherwise."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update

from tenantplane.catalogue.versions import load_versions
from tenantplane.cluster.models import Cluster, ClusterPhase
from tenantplane.cluster.reconciler import ClusterReconciler
from tenantplane.db.engine import Database
from tenantplane.providers.orchestrator import ClusterSpec, Observation, Orchestrator
from tenantplane.providers.orchestrator.simulator import SimulatorOrchestrator
from tenantplane.reconcile.runner import ReconcilerRunner
from tests.factories import Factory
from tests.statements import statements_sent


class OneByOne:
    """An orchestrator that takes one call at a time (as a remote one does)."""

    def __init__(self, inner: SimulatorOrchestrator) -> None:
        self.inner = inner

    async def apply(self, spec: ClusterSpec) -> Observation:
        return await self.inner.apply(spec)

    async def delete(self, spec: ClusterSpec) -> Observation:
        return await self.inner.delete(spec)


def reconciler_of(orchestrator: Orchestrator) -> ClusterReconciler:
    return ClusterReconciler(
        orchestrator, load_versions(), progress_seconds=3600, resync_seconds=3600
    )


async def phases(database: Database, ids: list[int]) -> dict[int, str]:
    async with database.transaction() as session:
        rows = await session.execute(select(Cluster.id, Cluster.phase).where(Cluster.id.in_(ids)))
        return {row_id: phase for row_id, phase in rows}


async def test_clusters_due_together_are_provisioned_in_one_simulator_transaction(
    database: Database, factory: Factory
) -> None:
    ids = await factory.due_clusters(6)
    reconciler = reconciler_of(SimulatorOrchestrator(database, step_seconds=3600))
    assert reconciler.batched
    assert reconciler.concurrency == 64  # the batch size, not the single-call concurrency
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)
    with statements_sent(database.engine) as sent:
        assert await runner.run_once() == 6
    assert set((await phases(database, ids)).values()) == {ClusterPhase.provisioning.value}
    simulator_reads = [s for s in sent if s.startswith("SELECT") and "FROM SIMULATOR_CLUSTERS" in s]
    # One read of the batch's deployments; the new ones inserted together and read back once.
    assert len(simulator_reads) == 2, simulator_reads
    inserts = [s for s in sent if s.startswith("INSERT INTO SIMULATOR_CLUSTERS")]
    assert len(inserts) == 1, inserts
    # The batch loaded with its tenants in one read, and read under its leases in one.
    loads = [s for s in sent if "FROM CLUSTERS LEFT OUTER JOIN TENANTS" in s]
    leased = [s for s in sent if "(CLUSTERS.ID, CLUSTERS.LOCK_TOKEN) IN" in s]
    assert (len(loads), len(leased)) == (1, 1), (loads, leased)
    if not database.is_sqlite:
        # Every row's status in one statement, each row under its own lease.
        status_writes = [s for s in sent if s.startswith("UPDATE CLUSTERS AS T")]
        assert len(status_writes) == 1, status_writes


async def test_a_row_of_a_batch_whose_lease_was_lost_is_not_written(
    database: Database, factory: Factory
) -> None:
    ids = await factory.due_clusters(3)
    reconciler = reconciler_of(SimulatorOrchestrator(database, step_seconds=3600))
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)
    leases = await runner.fetcher.lease(3, timedelta(seconds=30))
    assert sorted(lease.row_id for lease in leases) == sorted(ids)
    async with database.transaction() as session:
        loaded = await reconciler.load_batch(session, ids)
    snapshots = {row_id: work for row_id, work in loaded.items() if work is not None}
    outcomes = [
        outcome
        for outcome in await reconciler.act_batch([snapshots[lease.row_id] for lease in leases])
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
    reconciler = reconciler_of(OneByOne(SimulatorOrchestrator(database, step_seconds=3600)))
    assert not reconciler.batched
    assert reconciler.concurrency == 16
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)
    assert await runner.run_once() == 3
    assert set((await phases(database, ids)).values()) == {ClusterPhase.provisioning.value}
