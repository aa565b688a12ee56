"""The cluster reconciler: drives each cluster towards its spec through the orchestrator.

load: the spec as of now (and whether deletion was requested); act: ``apply`` or ``delete``
on the orchestrator, with no session open; apply: write the observed status under the lease,
record phase changes in the history, and schedule the next look (one simulator step while
something is in progress, the resync interval once settled, at once when the spec changed
meanwhile). With External Secrets syncing, the cluster's own Kubernetes auth mount in the vault
(``providers/vault/cluster_auth.py``) is ensured each time the cluster is seen serving, before
it is recorded Running, and removed first when it is deleted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.schema import Table

from tenantplane.catalogue.plans import PlanCatalogue, load_plans
from tenantplane.catalogue.versions import VersionCatalogue, load_versions
from tenantplane.cluster.events import phase_changed, status_events
from tenantplane.cluster.models import Cluster, ClusterEvent, ClusterHistory, ClusterPhase
from tenantplane.cluster.repository import ClusterRepository
from tenantplane.cluster.status import observed_status
from tenantplane.cluster.tokens import token_webhooks
from tenantplane.event.log import Draft, append_all
from tenantplane.providers.orchestrator import (
    BatchOrchestrator,
    ClusterSpec,
    InDatabaseOrchestrator,
    Observation,
    Orchestrator,
    Stage,
    TokenWebhook,
)
from tenantplane.providers.sync import ClusterRef
from tenantplane.reconcile.fence import Fence, hold_each
from tenantplane.reconcile.lease import GuardedWrite, LeaseGuard, update_each
from tenantplane.reconcile.reconciler import Reconciler
from tenantplane.reconcile.registry import ReconcileContext
from tenantplane.secret.service import clusters_changed
from tenantplane.tenant.models import Tenant

if TYPE_CHECKING:
    from tenantplane.providers.vault.cluster_auth import ClusterAuth

CLUSTERS = "clusters"


@dataclass(frozen=True)
class ClusterWork:
    cluster_id: int
    generation: int
    deleting: bool
    spec: ClusterSpec


@dataclass(frozen=True)
class StatusWrite:
    """One cluster's status write of a batch: the guarded write, the row as read under its
    lease, the columns that change, the whole status (for the history) and the platform
    events it records (cluster/events.py), appended only if the write is made."""

    write: GuardedWrite
    cluster: Cluster
    changes: dict[str, Any]
    status: dict[str, Any]
    events: list[Draft]


class ClusterReconciler(Reconciler[ClusterWork, Observation]):
    name: ClassVar[str] = CLUSTERS
    table: ClassVar[Table] = Cluster.__table__  # type: ignore[assignment]
    load_in_one_statement: ClassVar[bool] = True  # the clusters with their tenants

    def __init__(
        self,
        orchestrator: Orchestrator,
        versions: VersionCatalogue,
        *,
        plans: PlanCatalogue | None = None,
        progress_seconds: float,
        resync_seconds: float,
        concurrency: int = 16,
        batch_size: int = 64,
        lease_seconds: float = 30.0,
        retry_seconds: float = 5.0,
        cluster_auth: ClusterAuth | None = None,
        token_webhook: Callable[[str], TokenWebhook] | None = None,
    ) -> None:
        self.orchestrator = orchestrator
        self.token_webhook = token_webhook
        self.cluster_auth = cluster_auth
        # With an orchestrator that takes many calls at once (the simulator: one transaction),
        # the rows of a fetch are read, acted on and written together: many clusters
        # provisioning at once cost three transactions per batch instead of per row. Calls
        # to a remote orchestrator stay one row at a time: a slow call holds up its row only.
        self.batched = isinstance(orchestrator, BatchOrchestrator)
        # The simulator keeps its state in this database: its calls are made in the
        # transaction that records what they observed.
        self.acts_in_apply = isinstance(orchestrator, InDatabaseOrchestrator)
        self.concurrency = batch_size if self.batched else concurrency
        self.error_backoff_seconds = retry_seconds
        self.versions = versions
        self.plans = plans
        self.progress = timedelta(seconds=progress_seconds)
        self.resync = timedelta(seconds=resync_seconds)
        self.lease_seconds = lease_seconds

    async def load(self, session: AsyncSession, row_id: Any) -> ClusterWork | None:
        return (await self.load_batch(session, [row_id]))[row_id]

    async def load_batch(
        self, session: AsyncSession, row_ids: Sequence[Any]
    ) -> dict[Any, ClusterWork | None]:
        found = await ClusterRepository.from_session(session).get_with_tenants(row_ids)
        return {
            row_id: self._work(*found[row_id]) if row_id in found else None for row_id in row_ids
        }

    def _work(self, cluster: Cluster, tenant: Tenant | None) -> ClusterWork:
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
                token_webhook=self.token_webhook(cluster.uid) if self.token_webhook else None,
            ),
        )

    def _pool(self, tenant: Tenant | None) -> dict[str, str]:
        if tenant is None or self.plans is None:
            return {}
        limits = self.plans.limits(tenant.plan)
        return {"cpu": limits.cpu, "memory": limits.memory, "storage": limits.storage}

    async def act(self, snapshot: ClusterWork, fence: Fence) -> Observation:
        spec = snapshot.spec
        ref = ClusterRef(spec.uid, spec.name, "", "", tenant=spec.tenant)
        if snapshot.deleting:
            if self.cluster_auth is not None:
                # Nothing logs in through the cluster's vault auth once it is being deleted.
                await self.cluster_auth.remove(ref, fence)
            return await self.orchestrator.delete(spec, fence)
        observed = await self.orchestrator.apply(spec, fence)
        if self.cluster_auth is not None and observed.stage in (Stage.ready, Stage.upgrading):
            await self.cluster_auth.ensure(ref, fence)
        return observed

    async def act_batch(
        self, snapshots: Sequence[ClusterWork], fences: Sequence[Fence]
    ) -> list[Observation | BaseException]:
        if not isinstance(self.orchestrator, BatchOrchestrator):
            return await super().act_batch(snapshots, fences)
        # One call for the rows whose leases still hold, proved just before it.
        lost = await hold_each(fences)
        calls = [
            (snapshot.spec, snapshot.deleting)
            for snapshot, missing in zip(snapshots, lost, strict=True)
            if missing is None
        ]
        observed = iter(await self.orchestrator.act_many(calls) if calls else [])
        return [next(observed) if missing is None else missing for missing in lost]

    async def apply(
        self,
        session: AsyncSession,
        guard: LeaseGuard,
        snapshot: ClusterWork,
        outcome: Observation,
    ) -> None:
        await self.apply_batch(session, [(guard, snapshot, outcome)])

    async def apply_batch(
        self,
        session: AsyncSession,
        batch: Sequence[tuple[LeaseGuard, ClusterWork, Observation]],
    ) -> None:
        """The batch's rows read and locked in one statement (those whose lease was lost
        are left out), then ``_write``."""
        repository = ClusterRepository.from_session(session)
        tokens = {guard.lease.row_id: guard.lease.token for guard, _, _ in batch}
        await self._write(session, repository, await repository.get_leased(tokens), batch)

    async def act_and_apply_batch(
        self, session: AsyncSession, guards: Sequence[LeaseGuard]
    ) -> None:
        """``acts_in_apply``: the batch's rows still held read and locked with their
        tenants in one statement, the orchestrator called for them (in this transaction),
        then ``_write``. A row whose lease was lost, or that is gone, is left alone."""
        assert isinstance(self.orchestrator, InDatabaseOrchestrator)
        repository = ClusterRepository.from_session(session)
        found = await repository.get_leased_with_tenants(
            {guard.lease.row_id: guard.lease.token for guard in guards}
        )
        held = {cluster_id: cluster for cluster_id, (cluster, _) in found.items()}
        working = [
            (guard, self._work(*found[guard.lease.row_id]))
            for guard in guards
            if guard.lease.row_id in found
        ]
        if not working:
            return
        calls = [(snapshot.spec, snapshot.deleting) for _, snapshot in working]
        outcomes = await self.orchestrator.act_many_in(session, calls)
        steps = [
            (guard, snapshot, outcome)
            for (guard, snapshot), outcome in zip(working, outcomes, strict=True)
        ]
        await self._write(session, repository, held, steps)

    async def _write(
        self,
        session: AsyncSession,
        repository: ClusterRepository,
        held: dict[int, Cluster],
        batch: Sequence[tuple[LeaseGuard, ClusterWork, Observation]],
    ) -> None:
        """One time from the database's clock for all, every held row's status written
        under its own lease in one statement per set of columns (``update_each``), the
        secrets of clusters that changed phase told once per tenant, and last (it locks the
        tenants' event chains) the platform events of the rows written (cluster/events.py)."""
        if not held:
            return  # every lease was lost: other workers own these clusters now
        # The database's clock (Running, haEnabledAt, history): the lease's time from it and
        # this process's monotonic clock since, without a round trip to ask it again.
        now = batch[0][0].lease.now()
        read_at = time.monotonic()  # when ``now`` was (this process's clock)
        told: dict[int, list[str]] = {}
        history: list[dict[str, Any]] = []
        events: list[tuple[int, Draft]] = []
        writes: list[StatusWrite] = []
        for guard, snapshot, outcome in batch:
            cluster = held.get(snapshot.cluster_id)
            if cluster is None:
                continue
            if snapshot.deleting and outcome.stage == Stage.gone:
                if await guard.delete():
                    deleted = ClusterPhase.deleted.value
                    history.append(
                        ClusterHistory.values(cluster, ClusterEvent.deleted, now, phase=deleted)
                    )
                    told.setdefault(cluster.tenant_id, []).append(cluster.name)
                    events.append(
                        (cluster.tenant_id, phase_changed(cluster.name, cluster.phase, deleted))
                    )
                continue
            writes.append(self._status_write(guard, cluster, snapshot, outcome, now, read_at))
        written = await update_each(session, _same_columns(writes))
        for one in writes:
            if one.write.lease.row_id not in written:
                continue
            cluster = one.cluster
            history.extend(_history(cluster, one.changes, one.status, now))
            if "phase" in one.changes:
                told.setdefault(cluster.tenant_id, []).append(cluster.name)
            events.extend((cluster.tenant_id, event) for event in one.events)
        await repository.record_all(history)
        for tenant_id, names in told.items():
            # Secrets syncing into these clusters wait for Running (or their deletion).
            await clusters_changed(session, tenant_id, names)
        await append_all(session, events)

    def _status_write(
        self,
        guard: LeaseGuard,
        cluster: Cluster,
        snapshot: ClusterWork,
        outcome: Observation,
        now: datetime,
        read_at: float,
    ) -> StatusWrite:
        """One cluster's observed status and its next look, to be written under its lease;
        with the columns that changed, the whole status (for the history) and the events."""
        status = observed_status(cluster, outcome, now)
        status["observed_generation"] = snapshot.generation  # shown in status: moves the ETag
        changes = {key: value for key, value in status.items() if getattr(cluster, key) != value}
        nudged = cluster.reconcile_at is not None and cluster.reconcile_at > guard.lease.leased_at
        if cluster.generation != snapshot.generation or nudged:
            next_at = now  # the spec changed, or someone asked for a look, while we were away
        elif outcome.settled and not cluster.is_terminating:
            next_at = now + self.resync
        elif outcome.next_change_seconds is not None:
            # When the orchestrator's next step is due, counted from its own call (not from
            # now, which comes after the call by the rest of the step): a look a whole
            # interval after this one, or after now, would add that time to every step.
            due = outcome.next_change_seconds - (read_at - outcome.observed_at)
            next_at = now + min(self.progress, timedelta(seconds=max(due, 0.0)))
        else:
            next_at = now + self.progress
        values: dict[str, Any] = {**changes, "reconcile_at": next_at}
        events: list[Draft] = []
        if changes:
            values["resource_version"] = cluster.resource_version + 1
            desired = f"v{snapshot.spec.version}.{snapshot.spec.patch}"
            events = status_events(cluster, status, desired, outcome.message)
        return StatusWrite(GuardedWrite(guard.lease, values), cluster, changes, status, events)


def _same_columns(writes: Sequence[StatusWrite]) -> list[GuardedWrite]:
    """The writes of a batch, each naming every column any of them sets (the others at the
    row's current value, read under its lock in this transaction): ``update_each`` sends
    one statement per set of columns, and the rows of one batch change different ones."""
    columns = {name: None for one in writes for name in one.write.values}
    return [
        replace(
            one.write,
            values={
                name: one.write.values.get(name, getattr(one.cluster, name)) for name in columns
            },
        )
        for one in writes
    ]


def _history(
    cluster: Cluster, changes: dict[str, Any], status: dict[str, Any], now: datetime
) -> list[dict[str, Any]]:
    """The history rows a status write adds: a phase change, HA becoming configured. The
    ORM object still holds the old values; the rows carry the new ones."""
    events = []
    if "phase" in changes:
        events.append(ClusterEvent.phase_changed)
    if "ha_configured" in changes and status["ha_configured"]:
        events.append(ClusterEvent.ha_configured)
    return [
        ClusterHistory.values(
            cluster,
            event,
            now,
            phase=status["phase"],
            kubernetes_version=status["kubernetes_version"],
            ha_enabled_at=status["ha_enabled_at"],
        )
        for event in events
    ]


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
        batch_size=settings.reconcile_batch_size,
        lease_seconds=settings.reconcile_lease_seconds,
        retry_seconds=settings.cluster_retry_seconds,
        cluster_auth=build_auth(context),
        token_webhook=token_webhooks(settings),
    )


def build_auth(context: ReconcileContext) -> ClusterAuth | None:
    """The clusters' vault auth mounts, when External Secrets syncs into them."""
    settings = context.settings
    if settings.sync_provider != "external-secrets":
        return None
    from tenantplane.providers.kube import Kube, client_for, load_kubeconfig
    from tenantplane.providers.vault.cluster_auth import build_cluster_auth

    config = load_kubeconfig(settings.kubeconfig, settings.kubernetes_context)
    host = Kube(client_for(config, settings.kubernetes_timeout_seconds))
    auth = build_cluster_auth(settings, host)
    context.close_on_stop(auth.aclose)
    context.close_on_stop(host.aclose)
    return auth
