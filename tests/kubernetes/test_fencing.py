"""Fencing against the real API server: a worker that froze between two writes of a cluster,
long enough for its lease to lapse and another worker to take the row, makes no further write
to the host cluster (reconcile/fence.py; docs/reconcilers.md, "Fencing")."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from lightkube import ApiError, Client
from lightkube.resources.core_v1 import Namespace, ResourceQuota
from lightkube.resources.networking_v1 import NetworkPolicy
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.cluster.reconciler import ClusterReconciler
from tenantplane.db.engine import Database
from tenantplane.providers.kube import HelmRelease, Kube
from tenantplane.providers.orchestrator.kubernetes import ChartSettings, KubernetesOrchestrator
from tenantplane.reconcile.fence import Fence, LeaseLost
from tenantplane.reconcile.fetcher import Fetcher
from tests.factories import Factory, expire_lease, fence_of
from tests.kubernetes.conftest import Bed
from tests.kubernetes.looks import cluster_spec

pytestmark = [
    pytest.mark.kubernetes,
    pytest.mark.parametrize("database_url", ["postgresql"], indirect=True),
]

LEASE = timedelta(seconds=30)


class FreezesBeforeItsThirdWrite:
    """The fence a runner hands the orchestrator, for a worker that stalls before its third
    write: meanwhile its lease lapses and another worker leases the row."""

    def __init__(self, database: Database, fence: Fence, take_over: Any) -> None:
        self.database, self.fence, self.take_over = database, fence, take_over
        self.holds = 0

    async def hold(self, **values: Any) -> None:
        self.holds += 1
        if self.holds == 3:
            await expire_lease(self.database, self.fence.lease)
            await self.take_over()
        await self.fence.hold(**values)

    async def hold_in(self, session: AsyncSession, **values: Any) -> None:
        await self.fence.hold_in(session, **values)


async def test_a_worker_that_lost_its_lease_writes_nothing_more(
    database: Database, factory: Factory, bed: Bed, host: Kube, kube: Client
) -> None:
    [row_id] = await factory.due_clusters(1)
    [lease] = await Fetcher(database, ClusterReconciler.table, "frozen").lease(1, LEASE)
    assert lease.row_id == row_id

    async def take_over() -> None:
        [taken] = await Fetcher(database, ClusterReconciler.table, "other").lease(1, LEASE)
        assert taken.row_id == row_id

    fence = FreezesBeforeItsThirdWrite(database, fence_of(database, lease), take_over)
    tenant = f"f{uuid.uuid4().hex[:8]}"
    spec = cluster_spec("fenced", tenant=tenant)
    chart = ChartSettings(bed.chart_repository, "0.30.0", "{cluster}.{tenant}.test")
    with pytest.raises(LeaseLost):
        await KubernetesOrchestrator(host, chart).apply(spec, fence)
    namespace = f"tp-{tenant}"
    # The two writes made under the lease are there; none after it was lost.
    kube.get(Namespace, namespace)
    kube.get(ResourceQuota, "plan", namespace=namespace)
    for kind, name in ((NetworkPolicy, "tenant-isolation"), (HelmRelease, "fenced")):
        with pytest.raises(ApiError) as missing:
            kube.get(kind, name, namespace=namespace)
        assert missing.value.status.code == 404
    kube.delete(Namespace, namespace)
