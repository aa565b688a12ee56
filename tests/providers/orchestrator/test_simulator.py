"""The simulated orchestrator counts the provisioning calls it receives, so that tests can
prove a cluster was provisioned once by the calls that arrived, not by a field set once."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import text

from tenantplane.db.engine import Database
from tenantplane.providers.orchestrator import ClusterSpec, Observation, Stage
from tenantplane.providers.orchestrator.simulator import SimulatorOrchestrator
from tenantplane.reconcile.fence import UNFENCED
from tests.factories import simulated_deployment
from tests.statements import statements_sent

DEADLINE_SECONDS = 30.0
WAITING_ON_A_TRANSACTION = text(
    "SELECT count(*) FROM pg_locks WHERE locktype = 'transactionid' AND NOT granted"
)


def spec() -> ClusterSpec:
    return ClusterSpec(
        uid=uuid.uuid4().hex,
        name="dev",
        tenant="acme",
        version="1.33",
        patch=4,
        high_availability=False,
        cpu="1",
        memory="1Gi",
        storage="10Gi",
    )


async def provision_count(orchestrator: SimulatorOrchestrator, uid: str) -> int:
    state = await orchestrator.state(uid)
    assert state is not None
    return state.provision_count


async def test_later_calls_observe_the_deployment_without_provisioning_again(
    database: Database,
) -> None:
    orchestrator = SimulatorOrchestrator(database, step_seconds=3600)
    wanted = spec()
    first = await orchestrator.apply(wanted, UNFENCED)
    again = await orchestrator.apply(wanted, UNFENCED)
    assert again.endpoint == first.endpoint
    assert await provision_count(orchestrator, wanted.uid) == 1
    # A second cluster is a provisioning of its own, counted on its own deployment.
    other = spec()
    await orchestrator.apply(other, UNFENCED)
    assert await provision_count(orchestrator, other.uid) == 1


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_two_calls_that_both_find_no_deployment_count_twice(database: Database) -> None:
    """Two reconcilers that both believe they hold a cluster's lease both provision it: the
    count shows 2 (SQLite runs one writing transaction at a time: the second call would find
    the first's deployment, so this race exists on PostgreSQL only)."""
    orchestrator = SimulatorOrchestrator(database, step_seconds=3600)
    wanted = spec()
    loop = asyncio.get_running_loop()
    async with database.sessionmaker() as blocker, blocker.begin():
        # An uncommitted deployment of the same uid: invisible to both calls' reads, so both
        # decide to provision, and both inserts wait for this transaction to end.
        blocker.add(simulated_deployment(wanted.uid, name="placeholder"))
        await blocker.flush()
        calls = [asyncio.create_task(orchestrator.apply(wanted, UNFENCED)) for _ in range(2)]
        give_up = loop.time() + DEADLINE_SECONDS
        while True:
            async with database.sessionmaker() as probe:
                waiting = (await probe.execute(WAITING_ON_A_TRANSACTION)).scalar()
            if waiting == 2:
                break
            assert not any(call.done() for call in calls), [c.result() for c in calls]
            assert loop.time() < give_up, "the two provisioning calls never both waited"
            await asyncio.sleep(0.02)
        await blocker.rollback()
    await asyncio.gather(*calls)
    assert await provision_count(orchestrator, wanted.uid) == 2


def _seen(observation: Observation) -> tuple[object, ...]:
    """An observation without what is drawn at random per deployment (endpoint, CA)."""
    return (
        observation.stage,
        observation.version,
        observation.control_plane,
        observation.etcd,
        observation.settled,
        observation.message,
    )


async def test_many_calls_at_once_observe_what_the_calls_one_by_one_do(
    database: Database,
) -> None:
    """``act_many``: a new deployment provisioned, a known one moved on, one torn down and an
    unknown one reported gone, in one transaction, as the same calls one by one would."""
    orchestrator = SimulatorOrchestrator(database, step_seconds=0)

    async def scenario() -> tuple[list[tuple[ClusterSpec, bool]], ClusterSpec]:
        known, leaving, new = spec(), spec(), spec()
        await orchestrator.apply(known, UNFENCED)
        await orchestrator.apply(leaving, UNFENCED)
        return [(new, False), (known, False), (leaving, True), (spec(), True)], new

    one_by_one, _ = await scenario()
    expected = [
        await (
            orchestrator.delete(wanted, UNFENCED)
            if deleting
            else orchestrator.apply(wanted, UNFENCED)
        )
        for wanted, deleting in one_by_one
    ]
    together, new = await scenario()
    with statements_sent(database.engine) as sent:
        observed = await orchestrator.act_many(together)
    assert [_seen(observation) for observation in observed] == [
        _seen(observation) for observation in expected
    ]
    assert observed[0].stage == Stage.creating
    assert observed[1].settled
    assert observed[3].stage == Stage.gone
    assert await provision_count(orchestrator, new.uid) == 1
    # One read of every deployment of the batch, one insert that returns the new ones.
    reads = [statement for statement in sent if statement.startswith("SELECT")]
    assert len(reads) == 1, sent
    inserts = [statement for statement in sent if statement.startswith("INSERT")]
    assert len(inserts) == 1, sent
    assert "RETURNING" in inserts[0], sent
