"""The cluster reconciler looks again when the orchestrator's next step is due (the
simulator says when), not a whole polling interval after its last look: an interval after
each look would add the time between the orchestrator's call and the look to every step."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from sqlalchemy import select

from tenantplane.catalogue.versions import load_versions
from tenantplane.cluster.models import Cluster, ClusterPhase
from tenantplane.cluster.reconciler import ClusterReconciler
from tenantplane.db.clock import database_now
from tenantplane.db.engine import Database
from tenantplane.providers.orchestrator.simulator import SimulatorOrchestrator
from tenantplane.reconcile.fence import UNFENCED
from tenantplane.reconcile.runner import ReconcilerRunner
from tests.factories import Factory, fence_of
from tests.providers.orchestrator.test_simulator import spec

STEP_SECONDS = 1.0


def stepping_reconciler(database: Database) -> ClusterReconciler:
    """A reconciler of the simulator whose polling interval is far longer than a step."""
    return ClusterReconciler(
        SimulatorOrchestrator(database, STEP_SECONDS),
        load_versions(),
        progress_seconds=3600,
        resync_seconds=3600,
    )


async def test_the_next_look_is_when_the_simulators_next_step_is_due(
    database: Database, factory: Factory
) -> None:
    [cluster_id] = await factory.due_clusters(1)
    reconciler = stepping_reconciler(database)
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)
    assert await runner.run_once() == 1  # provisions: the first step is one step away
    async with database.transaction() as session:
        now = await database_now(session)
        row = (await session.execute(select(Cluster).where(Cluster.id == cluster_id))).scalar_one()
    assert row.phase == ClusterPhase.provisioning.value, row.phase
    assert row.reconcile_at is not None
    assert row.reconcile_at - now <= timedelta(seconds=STEP_SECONDS)


async def test_the_simulator_says_when_its_next_step_is_due_until_settled(
    database: Database,
) -> None:
    orchestrator = SimulatorOrchestrator(database, step_seconds=0)
    wanted = spec()
    first = await orchestrator.apply(wanted, UNFENCED)
    assert first.next_change_seconds is not None
    settled = await orchestrator.apply(wanted, UNFENCED)
    assert settled.settled
    assert settled.next_change_seconds is None


async def test_the_next_look_counts_from_the_orchestrators_call_not_from_the_write(
    database: Database, factory: Factory
) -> None:
    """An observation written a while after it was made (a busy worker) still schedules the
    next look when the orchestrator's next step is due, not that long after it."""
    [cluster_id] = await factory.due_clusters(1)
    reconciler = stepping_reconciler(database)
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)
    [lease] = await runner.fetcher.lease(1, timedelta(seconds=30))
    async with database.transaction() as session:
        work = await reconciler.load(session, lease.row_id)
    assert work is not None
    observed = await reconciler.act(work, fence_of(database, lease))
    assert observed.next_change_seconds is not None
    # As if the write came 0.6 s after the simulator's call.
    late = replace(observed, observed_at=observed.observed_at - 0.6)
    async with database.transaction() as session:
        await reconciler.apply(session, lease.guard(session), work, late)
    async with database.transaction() as session:
        now = await database_now(session)
        row = (await session.execute(select(Cluster).where(Cluster.id == cluster_id))).scalar_one()
    assert row.reconcile_at is not None
    assert row.reconcile_at - now <= timedelta(seconds=STEP_SECONDS - 0.6)
