"""Fences: an act proves it still holds its lease before each side effect.

``hold`` renews a lease still held for a full term (and writes the values it is given in
the same statement); once the lease has lapsed, been taken over or lost its row, it raises
``LeaseLost`` and writes nothing. ``held`` commits what is written in it only together with
that proof; ``hold_each`` proves a batch's leases in one statement.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import delete, select

from tenantplane.cluster.models import Cluster
from tenantplane.db.clock import database_now
from tenantplane.db.engine import Database
from tenantplane.reconcile.fence import LeaseLost, hold_each
from tenantplane.reconcile.fetcher import Fetcher
from tenantplane.reconcile.lease import Lease
from tests.factories import Factory, expire_lease, fence_of

CLUSTERS = Cluster.__table__


async def leased(database: Database, factory: Factory, count: int = 1) -> list[Lease]:
    await factory.due_clusters(count)
    return await Fetcher(database, CLUSTERS, "fenced").lease(count, timedelta(seconds=30))  # type: ignore[arg-type]


async def row(database: Database, lease: Lease) -> Cluster:
    async with database.sessionmaker() as session:
        found = await session.get(Cluster, lease.row_id)
    assert found is not None
    return found


async def test_a_held_lease_is_renewed_for_a_full_term_with_the_values_given(
    database: Database, factory: Factory
) -> None:
    [lease] = await leased(database, factory)
    fence = fence_of(database, lease, seconds=600)
    await fence.hold(observed_generation=7)
    after = await row(database, lease)
    async with database.transaction() as session:
        now = await database_now(session)
    assert after.lock_token == lease.token
    assert after.observed_generation == 7
    assert after.lock_expires_at is not None
    assert after.lock_expires_at > now + timedelta(seconds=500)  # renewed, not the 30 s lease


@pytest.mark.parametrize("loss", ["lapsed", "taken over", "deleted"])
async def test_a_lost_lease_raises_and_writes_nothing(
    database: Database, factory: Factory, loss: str
) -> None:
    [lease] = await leased(database, factory)
    if loss == "lapsed":
        await expire_lease(database, lease)
    elif loss == "taken over":
        await expire_lease(database, lease)
        [newer] = await Fetcher(database, CLUSTERS, "newer").lease(1, timedelta(seconds=30))  # type: ignore[arg-type]
        assert newer.row_id == lease.row_id
    else:
        async with database.transaction() as session:
            await session.execute(delete(Cluster).where(Cluster.id == lease.row_id))
    fence = fence_of(database, lease)
    with pytest.raises(LeaseLost):
        await fence.hold(observed_generation=7)
    with pytest.raises(LeaseLost):
        async with fence.held() as session:
            session.add(Cluster(tenant_id=1, name="never", uid="never"))
    async with database.sessionmaker() as session:
        generations = (await session.execute(select(Cluster.observed_generation))).scalars()
        names = (await session.execute(select(Cluster.name))).scalars().all()
    assert 7 not in set(generations)
    assert "never" not in names


async def test_what_is_written_in_held_commits_with_the_proof(
    database: Database, factory: Factory
) -> None:
    [lease] = await leased(database, factory)
    async with fence_of(database, lease).held(observed_generation=3) as session:
        cluster = await session.get(Cluster, lease.row_id)
        assert cluster is not None
        cluster.endpoint = "https://written.under.the.lease"
    after = await row(database, lease)
    assert (after.observed_generation, after.endpoint) == (3, "https://written.under.the.lease")


async def test_a_batch_is_proved_in_one_statement_row_by_row(
    database: Database, factory: Factory
) -> None:
    leases = await leased(database, factory, 3)
    await expire_lease(database, leases[1])
    lost = await hold_each([fence_of(database, lease) for lease in leases])
    assert [type(outcome) for outcome in lost] == [type(None), LeaseLost, type(None)]
    assert await hold_each([]) == []
