"""The secret reconciler: check the vault path, place copies on Running clusters, remove
copies no longer wanted, record per-target status.

Everything done for one secret happens under the lease on its row, so the copies of a secret
are never worked on by two workers at once. ``applied`` records the copies placed and not yet
removed: it is what removal (of a target, or of the whole secret) works from.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar

import structlog
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.schema import Table

from tenantplane.db.base import rfc3339
from tenantplane.event.log import Draft, append_all
from tenantplane.providers.sync import (
    CopySpec,
    SyncError,
    SyncPending,
    SyncProvider,
)
from tenantplane.providers.sync.simulator import SimulatorSyncProvider
from tenantplane.providers.vault import PathCheck, VaultPaths, build_vault_paths
from tenantplane.reconcile import Fence, LeaseGuard, Reconciler
from tenantplane.reconcile.lease import GuardedWrite, update_each
from tenantplane.reconcile.registry import ReconcileContext
from tenantplane.secret.models import Secret, SyncPhase
from tenantplane.secret.repository import SecretRepository
from tenantplane.secret.status import Reason, TargetKey, overall_phase, status_entry, target_key
from tenantplane.secret.sync_status import (
    path_failure,
    sync_conditions,
    target_events,
    without_times,
)
from tenantplane.secret.sync_view import (
    ClusterView,
    CopyKey,
    SecretView,
    SyncOutcome,
    applied_entry,
    copy_key,
)

log = structlog.get_logger(__name__)


class SecretReconciler(Reconciler[SecretView, SyncOutcome]):
    name: ClassVar[str] = "secrets"
    table: ClassVar[Table] = Secret.__table__  # type: ignore[assignment]
    single_statements: ClassVar[bool] = True
    # The rows of a fetch are read in one statement and their statuses written in one.
    batched = True

    def __init__(
        self,
        vault: VaultPaths,
        provider: SyncProvider,
        *,
        resync_seconds: float,
        retry_seconds: float,
        concurrency: int = 8,
        batch_size: int = 64,
        lease_seconds: float = 30.0,
        coalesce_seconds: float = 0.05,
    ) -> None:
        self.coalesce_seconds = coalesce_seconds
        self.vault = vault
        self.provider = provider
        self.resync_seconds = resync_seconds
        self.retry_seconds = retry_seconds
        # A look's lease, load and status write are one statement each whatever its rows,
        # and their cost is per statement: a look takes up to ``batch_size`` rows (at 16,
        # a worker kept up with 313 new secrets a second, at 64 with 500, for half the CPU
        # per secret; bench/history.md). The calls to vault and the clusters stay at most
        # ``concurrency`` at once, as many as before.
        self.concurrency = batch_size
        self._calls = asyncio.Semaphore(concurrency)
        self.lease_seconds = lease_seconds
        self.error_backoff_seconds = retry_seconds

    # -- load ------------------------------------------------------------------------------

    async def load(self, session: AsyncSession, row_id: Any) -> SecretView | None:
        return (await self.load_batch(session, [row_id]))[row_id]

    async def load_batch(
        self, session: AsyncSession, row_ids: Sequence[Any]
    ) -> dict[Any, SecretView | None]:
        """The secrets of a batch in one statement, and the clusters their targets name or
        their copies are on in one more (when any has a target or a copy)."""
        repository = SecretRepository.from_session(session)
        rows = await repository.many_with_tenant_names(row_ids)
        wanted: dict[int, tuple[list[dict[str, str]], list[dict[str, str]]]] = {}
        for row in rows:
            deleting = row.deletion_requested_at is not None
            wanted[row.id] = ([] if deleting else list(row.sync), list(row.applied))
        names = {target["cluster"] for targets, _ in wanted.values() for target in targets}
        uids = {entry["clusterUid"] for _, applied in wanted.values() for entry in applied}
        clusters = await repository.clusters_of_tenants(
            {row.tenant_id for row in rows if any(wanted[row.id])}, names, uids
        )
        by_tenant: dict[int, list[ClusterView]] = {}
        for cluster in clusters:
            by_tenant.setdefault(cluster.tenant_id, []).append(ClusterView.of(cluster))
        found: dict[Any, SecretView | None] = dict.fromkeys(row_ids)
        for row in rows:
            targets, applied = wanted[row.id]
            own_names = {target["cluster"] for target in targets}
            own_uids = {entry["clusterUid"] for entry in applied}
            # The tenant's clusters named by this secret's targets or holding its copies.
            views = [
                view
                for view in by_tenant.get(row.tenant_id, ())
                if view.name in own_names or view.uid in own_uids
            ]
            found[row.id] = SecretView(
                id=row.id,
                uid=row.uid,
                tenant_id=row.tenant_id,
                tenant=row.tenant,
                name=row.name,
                secret_path=row.secret_path,
                generation=row.generation,
                deleting=row.deletion_requested_at is not None,
                targets=targets,
                applied=applied,
                phase=row.phase,
                statuses=list(row.sync_statuses),
                conditions=list(row.conditions),
                clusters_by_name={view.name: view for view in views},
                clusters_by_uid={view.uid: view for view in views},
            )
        return found

    # -- act: vault and clusters, no session open -----------------------------------------

    async def act(self, snapshot: SecretView, fence: Fence) -> SyncOutcome:
        async with self._calls:
            return await self._sync(snapshot, fence)

    async def _sync(self, snapshot: SecretView, fence: Fence) -> SyncOutcome:
        path = None
        if not snapshot.deleting:
            path = await self.vault.check(snapshot.tenant, snapshot.secret_path, fence.lease.now())
        outcome = SyncOutcome(path)
        previous = {target_key(entry): entry for entry in snapshot.statuses}
        wanted: set[CopyKey] = set()
        clusters = [
            (target, snapshot.live_cluster(target["cluster"])) for target in snapshot.targets
        ]
        for target, cluster in clusters:
            if cluster is not None:
                wanted.add((cluster.uid, target["namespace"], target["secretName"]))
        if path_failure(path) is None:
            placing = [
                applied_entry(cluster, target)
                for target, cluster in clusters
                if cluster is not None and cluster.is_running
            ]
            await _record_copies(snapshot, placing, fence)
        for target, cluster in clusters:
            entry = await self._sync_target(
                snapshot, target, cluster, path, previous, outcome, fence
            )
            outcome.statuses.append(entry)
        await self._remove_unwanted(snapshot, wanted, outcome, fence)
        return outcome

    async def _sync_target(
        self,
        snapshot: SecretView,
        target: dict[str, str],
        cluster: ClusterView | None,
        path: PathCheck | None,
        previous: dict[TargetKey, dict[str, Any]],
        outcome: SyncOutcome,
        fence: Fence,
    ) -> dict[str, Any]:
        before = previous.get(target_key(target), {})
        last_sync = before.get("lastSyncTime")
        if cluster is None:
            message = f"cluster {target['cluster']!r} has been deleted"
            return status_entry(target, SyncPhase.failed, Reason.cluster_deleted, message)
        if not cluster.is_running:
            message = f"cluster {cluster.name!r} is {cluster.phase}, not Running"
            return status_entry(
                target, SyncPhase.pending, Reason.cluster_not_ready, message, last_sync
            )
        failure = path_failure(path)
        if failure is not None:
            phase, reason, message = failure
            return status_entry(target, phase, reason, message, last_sync)
        copy = CopySpec(
            tenant=snapshot.tenant,
            namespace=target["namespace"],
            name=target["secretName"],
            owner_uid=snapshot.uid,
            vault_mount=self.vault.mount_for(snapshot.tenant),
            secret_path=snapshot.secret_path,
        )
        # Recorded whatever the call's result: a copy that may exist must stay known to removal.
        outcome.applied.append(applied_entry(cluster, target))
        try:
            written = await self.provider.apply(cluster.ref(snapshot.tenant), copy, fence)
        except SyncPending as exc:
            return status_entry(target, SyncPhase.pending, Reason.sync_pending, str(exc), last_sync)
        except SyncError as exc:
            return status_entry(target, SyncPhase.failed, Reason.sync_error, str(exc), last_sync)
        if written or last_sync is None or before.get("phase") != SyncPhase.synced.value:
            # The database's time (the lease's), not this process's clock.
            last_sync = rfc3339(fence.lease.now())
        where = f"{cluster.name}/{target['namespace']}/{target['secretName']}"
        return status_entry(
            target, SyncPhase.synced, Reason.synced, f"synced to {where}", last_sync
        )

    async def _remove_unwanted(
        self, snapshot: SecretView, wanted: set[CopyKey], outcome: SyncOutcome, fence: Fence
    ) -> None:
        placed = {copy_key(entry) for entry in outcome.applied}
        for entry in snapshot.applied:
            key = copy_key(entry)
            if key in placed:
                continue
            if key in wanted:
                # Still a target, just not synced right now (cluster not ready, path gone):
                # the copy stays where it is.
                outcome.applied.append(entry)
                continue
            cluster = snapshot.clusters_by_uid.get(entry["clusterUid"])
            if cluster is None or cluster.deleting:
                continue  # the copy goes away with its cluster
            if not cluster.is_running:
                outcome.applied.append(entry)
                outcome.removals_pending += 1
                continue
            try:
                await self.provider.remove(
                    cluster.ref(snapshot.tenant),
                    entry["namespace"],
                    entry["secretName"],
                    snapshot.uid,
                    fence,
                )
            except SyncError:
                log.warning("copy removal failed", secret=snapshot.name, cluster=cluster.name)
                outcome.applied.append(entry)
                outcome.removals_pending += 1

    # -- apply -----------------------------------------------------------------------------

    async def apply(
        self, session: AsyncSession, guard: LeaseGuard, snapshot: SecretView, outcome: SyncOutcome
    ) -> None:
        await self.apply_batch(session, [(guard, snapshot, outcome)])

    async def apply_batch(
        self,
        session: AsyncSession,
        batch: Sequence[tuple[LeaseGuard, SecretView, SyncOutcome]],
    ) -> None:
        """Every change below is one statement under each row's own lease
        (``single_statements``): the status of every secret of the batch in one UPDATE, each
        row written only if its lease is held and it still has the generation acted on; the
        time stamped is the database's, from the lease: no round trip to ask it.

        A batch in which a target failed or recovered has events to record (``secret.
        sync_failed``, ``secret.sync_recovered``), which must commit with the statuses: on
        PostgreSQL its session (in autocommit otherwise) is then one transaction, committed
        here, the events appended last; the others stay single statements."""
        statuses: list[tuple[GuardedWrite, SecretView, SyncPhase]] = []
        events: dict[Any, list[Draft]] = {}
        for guard, snapshot, outcome in batch:
            if not snapshot.deleting:
                statuses.append(self._status_write(guard, snapshot, outcome, guard.lease.now()))
                if changed := target_events(snapshot, outcome.statuses):
                    events[guard.lease.row_id] = changed
        begun = await _transaction_for(session) if events else False
        for guard, snapshot, outcome in batch:
            if snapshot.deleting:
                await self._apply_deletion(guard, outcome, guard.lease.now())
        written = await update_each(session, [write for write, _, _ in statuses])
        kept: list[GuardedWrite] = []
        for write, snapshot, phase in statuses:
            if write.lease.row_id not in written:
                # Nothing written: the lease was lost (a newer pass owns the row, and this
                # write changes nothing either), or desired state changed while we worked
                # (a PATCH or DELETE committed meanwhile; one in flight holds the row and
                # the statement waited for it): keep what we learnt about copies and let the
                # next pass (already due) compute the status of the new targets.
                kept.append(GuardedWrite(write.lease, {"applied": write.values["applied"]}))
            elif phase.value != snapshot.phase:
                log.info(
                    "secret sync phase changed",
                    tenant=snapshot.tenant,
                    secret=snapshot.name,
                    phase=phase.value,
                )
        await update_each(session, kept)
        await append_all(
            session,
            [
                (snapshot.tenant_id, event)
                for write, snapshot, _ in statuses
                if write.lease.row_id in written
                for event in events.get(write.lease.row_id, ())
            ],
        )
        if begun:
            await session.commit()

    async def _apply_deletion(self, guard: LeaseGuard, outcome: SyncOutcome, now: datetime) -> None:
        if not outcome.applied:
            await guard.delete()
            return
        next_at = now + timedelta(seconds=self.retry_seconds)
        await guard.update(applied=outcome.applied, reconcile_at=next_at)

    def _status_write(
        self, guard: LeaseGuard, snapshot: SecretView, outcome: SyncOutcome, now: datetime
    ) -> tuple[GuardedWrite, SecretView, SyncPhase]:
        """The status of the generation acted on, to be written only while the row still has
        that generation and the lease is held."""
        phase = overall_phase(outcome.statuses)
        if phase is SyncPhase.synced and outcome.removals_pending:
            # Desired state is not reached while a removed target's copy is still there.
            phase = SyncPhase.pending
        conditions = sync_conditions(snapshot, outcome, phase, now)
        settled = phase is SyncPhase.synced
        values: dict[str, Any] = {
            "applied": outcome.applied,
            "observed_generation": snapshot.generation,
            "reconcile_at": now
            + timedelta(seconds=self.resync_seconds if settled else self.retry_seconds),
        }
        visible = {"phase": phase.value, "sync_statuses": outcome.statuses}
        before = {"phase": snapshot.phase, "sync_statuses": snapshot.statuses}
        increment: dict[str, int] = {}
        if visible != before or without_times(conditions) != without_times(snapshot.conditions):
            values.update(visible, conditions=conditions)
            increment["resource_version"] = 1
        # Written only while the row still has the generation acted on.
        write = GuardedWrite(guard.lease, values, {"generation": snapshot.generation}, increment)
        return write, snapshot, phase


async def _transaction_for(session: AsyncSession) -> bool:
    """Make ``session`` one transaction if it is in autocommit (a ``single_statements``
    apply on PostgreSQL), before its first statement; True when it did (the caller then
    commits). Elsewhere (SQLite) it is a transaction already, committed by its owner."""
    bind = session.get_bind()
    if bind.get_execution_options().get("isolation_level") != "AUTOCOMMIT":
        return False
    # What the pool's other transactions run at (known once a connection was made).
    level = getattr(bind.dialect, "default_isolation_level", None) or "READ COMMITTED"
    await session.connection(execution_options={"isolation_level": level})
    return True


async def _record_copies(snapshot: SecretView, placing: list[dict[str, str]], fence: Fence) -> None:
    """Before placing copies not yet known, add them to the row's ``applied`` under the
    lease (the intent): a worker that loses its lease after a write, before its apply,
    leaves no copy that whoever holds the row next does not know to remove."""
    known = {copy_key(entry) for entry in snapshot.applied}
    new = [entry for entry in placing if copy_key(entry) not in known]
    if new:
        await fence.hold(applied=[*snapshot.applied, *new])


def build_secret_reconciler(context: ReconcileContext) -> Reconciler[Any, Any] | None:
    settings = context.settings
    vault = build_vault_paths(settings)
    context.close_on_stop(vault.aclose)
    return SecretReconciler(
        vault,
        build_sync_provider(context),
        resync_seconds=settings.secret_resync_seconds,
        retry_seconds=settings.secret_retry_seconds,
        concurrency=settings.reconcile_concurrency,
        batch_size=settings.reconcile_batch_size,
        lease_seconds=settings.reconcile_lease_seconds,
    )


def build_sync_provider(context: ReconcileContext) -> SyncProvider:
    settings = context.settings
    if settings.sync_provider == "external-secrets":
        from tenantplane.providers.sync.external_secrets import build_external_secrets

        provider, close = build_external_secrets(settings)
        context.close_on_stop(close)
        return provider
    return SimulatorSyncProvider(context.database)
