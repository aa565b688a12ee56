"""The cluster reconciler: drives each cluster towards its spec through the orchestrator.

load: the spec as of now (and whether deletion was requested); act: ``apply`` or ``delete``
on the orchestrator, with no session open; apply: write the observed status under the lease,
record phase changes in the history, and schedule the next look (one simulator step while
something is in progress, the resync interval once settled, at once when the spec changed
meanwhile).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, ClassVar

from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.schema import Table

from tenantplane.catalogue.plans import PlanCatalogue, load_plans
from tenantplane.catalogue.versions import VersionCatalogue, load_versions
from tenantplane.cluster.models import Cluster, ClusterEvent, ClusterHistory, ClusterPhase
from tenantplane.cluster.repository import ClusterRepository
from tenantplane.cluster.status import observed_status
from tenantplane.providers.orchestrator import ClusterSpec, Observation, Orchestrator, Stage
from tenantplane.reconcile.lease import LeaseGuard
from tenantplane.reconcile.registry import ReconcileContext
from tenantplane.reconcile.runner import Reconciler
from tenantplane.secret.service import clusters_changed
from tenantplane.tenant.models import Tenant

CLUSTERS = "clusters"


@dataclass(frozen=True)
class ClusterWork:
    cluster_id: int
    generation: int
    deleting: bool
    spec: ClusterSpec


class ClusterReconciler(Reconciler[ClusterWork, Observation]):
    name: ClassVar[str] = CLUSTERS
    table: ClassVar[Table] = Cluster.__table__  # type: ignore[assignment]

    def __init__(
        self,
        orchestrator: Orchestrator,
        versions: VersionCatalogue,
        *,
        plans: PlanCatalogue | None = None,
        progress_seconds: float,
        resync_seconds: float,
        concurrency: int = 16,
        lease_seconds: float = 30.0,
        retry_seconds: float = 5.0,
    ) -> None:
        self.orchestrator = orchestrator
        self.error_backoff_seconds = retry_seconds
        self.versions = versions
        self.plans = plans
        self.progress = timedelta(seconds=progress_seconds)
        self.resync = timedelta(seconds=resync_seconds)
        self.concurrency = concurrency
        self.lease_seconds = lease_seconds

    async def load(self, session: AsyncSession, row_id: Any) -> ClusterWork | None:
        cluster = await ClusterRepository.from_session(session).get_by_id(row_id)
        if cluster is None:
            return None
        tenant = await session.get(Tenant, cluster.tenant_id)
        supported = self.versions.get(cluster.version)
        return ClusterWork(
            cluster_id=cluster.id,
            generation=cluster.generation,
            deleting=cluster.is_terminating,
            spec=ClusterSpec(
                uid=cluster.uid,
                name=cluster.name,
                tenant=tenant.name if tenant is not None else "",
                version=cluster.version,
                patch=supported.patch if supported is not None else 0,
                high_availability=cluster.high_availability,
                cpu=cluster.cpu,
                memory=cluster.memory,
                storage=cluster.storage,
                pool=self._pool(tenant),
            ),
        )

    def _pool(self, tenant: Tenant | None) -> dict[str, str]:
        if tenant is None or self.plans is None:
            return {}
        limits = self.plans.limits(tenant.plan)
        return {"cpu": limits.cpu, "memory": limits.memory, "storage": limits.storage}

    async def act(self, snapshot: ClusterWork) -> Observation:
        if snapshot.deleting:
            return await self.orchestrator.delete(snapshot.spec)
        return await self.orchestrator.apply(snapshot.spec)

    async def apply(
        self,
        session: AsyncSession,
        guard: LeaseGuard,
        snapshot: ClusterWork,
        outcome: Observation,
    ) -> None:
        repository = ClusterRepository.from_session(session)
        cluster = await repository.get_leased(snapshot.cluster_id, guard.lease.token)
        if cluster is None:
            return  # the lease was lost: another worker owns this cluster now
        now = await guard.now()  # the database's clock: Running, haEnabledAt, history
        if snapshot.deleting and outcome.stage == Stage.gone:
            if await guard.delete():
                repository.record(
                    ClusterHistory.snapshot(
                        cluster, ClusterEvent.deleted, now, phase=ClusterPhase.deleted.value
                    )
                )
                await clusters_changed(session, cluster.tenant_id, [cluster.name])
            return
        status = observed_status(cluster, outcome, now)
        status["observed_generation"] = snapshot.generation  # shown in status: moves the ETag
        changes = {key: value for key, value in status.items() if getattr(cluster, key) != value}
        nudged = cluster.reconcile_at is not None and cluster.reconcile_at > guard.lease.leased_at
        if cluster.generation != snapshot.generation or nudged:
            next_at = now  # the spec changed, or someone asked for a look, while we were away
        elif outcome.settled and not cluster.is_terminating:
            next_at = now + self.resync
        elif outcome.next_change_seconds is not None:
            # When the orchestrator's next step is due (measured from its own call, so this
            # look comes a little after it): a look a whole interval after this one would
            # add the time between the orchestrator's call and now to every step.
            next_at = now + min(self.progress, timedelta(seconds=outcome.next_change_seconds))
        else:
            next_at = now + self.progress
        values: dict[str, Any] = {**changes, "reconcile_at": next_at}
        if changes:
            values["resource_version"] = cluster.resource_version + 1
        if not await guard.update(**values):
            return
        self._record(repository, cluster, changes, status, now)
        if "phase" in changes:
            # Secrets syncing into this cluster wait for Running; tell them at once.
            await clusters_changed(session, cluster.tenant_id, [cluster.name])

    def _record(
        self,
        repository: ClusterRepository,
        cluster: Cluster,
        changes: dict[str, Any],
        status: dict[str, Any],
        now: Any,
    ) -> None:
        # The ORM object still holds the old values; history rows carry the new ones.
        if "phase" in changes:
            entry = ClusterHistory.snapshot(cluster, ClusterEvent.phase_changed, now)
            entry.phase = status["phase"]
            entry.kubernetes_version = status["kubernetes_version"]
            entry.ha_enabled_at = status["ha_enabled_at"]
            repository.record(entry)
        if "ha_configured" in changes and status["ha_configured"]:
            entry = ClusterHistory.snapshot(cluster, ClusterEvent.ha_configured, now)
            entry.phase = status["phase"]
            entry.kubernetes_version = status["kubernetes_version"]
            entry.ha_enabled_at = status["ha_enabled_at"]
            repository.record(entry)


def build_orchestrator(context: ReconcileContext) -> Orchestrator:
    settings = context.settings
    if settings.orchestrator == "kubernetes":
        from tenantplane.providers.orchestrator.kubernetes import build_kubernetes_orchestrator

        orchestrator, close = build_kubernetes_orchestrator(settings)
        context.close_on_stop(close)
        return orchestrator
    from tenantplane.providers.orchestrator.simulator import SimulatorOrchestrator

    return SimulatorOrchestrator(context.database, settings.simulator_step_seconds)


def build_cluster_reconciler(context: ReconcileContext) -> Reconciler[Any, Any] | None:
    settings = context.settings
    progress = (
        settings.kubernetes_poll_seconds
        if settings.orchestrator == "kubernetes"
        else settings.simulator_step_seconds
    )
    return ClusterReconciler(
        build_orchestrator(context),
        load_versions(settings.versions_file),
        plans=load_plans(settings.plans_file),
        progress_seconds=progress,
        resync_seconds=settings.cluster_resync_seconds,
        concurrency=settings.reconcile_concurrency,
        lease_seconds=settings.reconcile_lease_seconds,
        retry_seconds=settings.cluster_retry_seconds,
    )
