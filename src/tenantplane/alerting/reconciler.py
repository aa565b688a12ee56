"""The ``alerting`` reconciler: applies stored configurations to the backend after commit.

A write stores the tenant's validated document and makes its row due; this reconciler
leases the row, reads the document (and the tenant's credentials) in a short session, calls
Mimir or the shared Alertmanager with no session open, and records the outcome under the
lease: the version applied, or the backend's refusal (kept until the configuration changes)
or unavailability (retried with backoff). A cancelled tenant's configuration, or one reset,
is taken off the backend instead. See docs/alerting.md, "Applying to the backend".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, ClassVar

import structlog
from sqlalchemy import and_, case
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.schema import Table

from tenantplane.alerting.document import Document, clone
from tenantplane.alerting.models import AlertingConfig
from tenantplane.alerting.redaction import redact_text
from tenantplane.alerting.repository import AlertingRepository
from tenantplane.alerting.service import ALERTING_RECONCILER, credentials_of
from tenantplane.db.engine import Database
from tenantplane.event.log import append, platform_event
from tenantplane.keys import KeyRing
from tenantplane.providers.alerting.base import (
    AlertingBackend,
    BackendRejected,
    BackendUnavailable,
    Credentials,
    Target,
)
from tenantplane.reconcile.fence import Fence
from tenantplane.reconcile.lease import LeaseGuard
from tenantplane.reconcile.reconciler import Reconciler
from tenantplane.reconcile.registry import ReconcileContext
from tenantplane.tenant.models import Tenant, TenantState

log = structlog.get_logger(__name__)
RETRY_BASE_SECONDS = 5.0
RETRY_MAX_SECONDS = 300.0
# The longest backend refusal an event carries (the whole is in the operator's logs).
REASON_LENGTH = 1000


@dataclass(frozen=True)
class Delivery:
    tenant_id: int
    tenant: str
    version: int
    remove_pending: bool
    remove: bool  # take the configuration off the backend (reset, or tenant cancelled)
    document: Document
    credentials: Credentials | None
    attempts: int


@dataclass(frozen=True)
class Delivered:
    status: str  # applied | rejected | unavailable
    error: str = ""


class AlertingReconciler(Reconciler[Delivery, Delivered]):
    name: ClassVar[str] = ALERTING_RECONCILER
    table: ClassVar[Table] = AlertingConfig.__table__  # type: ignore[assignment]
    concurrency = 4

    def __init__(
        self,
        backend: AlertingBackend,
        database: Database,
        keys: KeyRing,
        *,
        backend_timeout_seconds: float = 10.0,
    ) -> None:
        self.backend = backend
        self.database = database
        self.keys = keys
        # The backend call (with its own timeout) ends well within the lease; the
        # heartbeat keeps it anyway.
        self.lease_seconds = max(30.0, 3 * backend_timeout_seconds)

    async def load(self, session: AsyncSession, row_id: Any) -> Delivery | None:
        row = await session.get(AlertingConfig, row_id)
        tenant = await session.get(Tenant, row_id)
        if row is None or tenant is None:
            return None
        credentials = None
        if self.backend.needs_credentials:
            stored = await AlertingRepository.from_session(session).get_credentials(tenant.id)
            if stored is None:
                return None  # unreachable in this backend: nothing to apply or take off
            credentials = credentials_of(stored, self.keys)
        return Delivery(
            tenant_id=tenant.id,
            tenant=tenant.name,
            version=row.resource_version,
            remove_pending=row.remove_pending,
            remove=row.remove_pending or tenant.state is TenantState.cancelled,
            document=clone(row.document),
            credentials=credentials,
            attempts=row.apply_attempts,
        )

    async def act(self, snapshot: Delivery, fence: Fence) -> Delivered:
        try:
            async with self.backend.render_lock():
                documents: dict[str, Document] = {}
                if self.backend.renders_all_tenants:
                    # Read inside the render lock, in a session closed before the call: the
                    # render holds every change committed before it began.
                    async with self.database.sessionmaker() as session:
                        documents = await AlertingRepository.from_session(session).all_documents()
                target = Target(snapshot.tenant, snapshot.credentials, documents)
                # Under the lease, held just before the write: a worker that stalled past
                # it must not push an older document over a newer one.
                await fence.hold()
                if snapshot.remove:
                    await self.backend.remove(target)
                else:
                    await self.backend.apply(target, snapshot.document)
        except BackendRejected as exc:
            return Delivered("rejected", str(exc))
        except BackendUnavailable as exc:
            return Delivered("unavailable", str(exc))
        return Delivered("applied")

    async def apply(
        self, session: AsyncSession, guard: LeaseGuard, snapshot: Delivery, outcome: Delivered
    ) -> None:
        columns = AlertingConfig.__table__.c
        now = await guard.now()
        # Unchanged since loaded: this outcome is the row's; else the newer write is due.
        same = and_(
            columns.resource_version == snapshot.version,
            columns.remove_pending == snapshot.remove_pending,
        )
        if outcome.status == "unavailable":
            attempts = snapshot.attempts + 1
            delay = min(RETRY_BASE_SECONDS * 2 ** (attempts - 1), RETRY_MAX_SECONDS)
            log.warning(
                "alerting backend unavailable; will retry",
                tenant=snapshot.tenant,
                error=outcome.error,
                retry_in_seconds=delay,
            )
            await guard.update(
                apply_status="unavailable",
                apply_error=outcome.error[:2000],
                apply_attempts=attempts,
                reconcile_at=case((same, now + timedelta(seconds=delay)), else_=now),
            )
            return
        if outcome.status == "rejected":
            log.warning(
                "alerting configuration refused by the backend",
                tenant=snapshot.tenant,
                version=snapshot.version,
                error=outcome.error,
            )
            refused = await guard.update(
                apply_status=case((same, "rejected"), else_="pending"),
                apply_error=outcome.error[:2000],
                apply_attempts=0,
                reconcile_at=case((same, None), else_=now),
            )
            if refused:
                # The backend's answer may quote the document: never its credentials.
                reason = redact_text(outcome.error, snapshot.document)[:REASON_LENGTH]
                await self._record(session, snapshot, "alerting.refused", reason=reason)
            return
        applied = await guard.update(
            applied_version=snapshot.version,
            apply_status=case((same, "applied"), else_="pending"),
            apply_error="",
            apply_attempts=0,
            remove_pending=case((same, False), else_=columns.remove_pending),
            reconcile_at=case((same, None), else_=now),
        )
        if applied:
            await self._record(session, snapshot, "alerting.applied")

    async def _record(
        self, session: AsyncSession, snapshot: Delivery, action: str, **data: Any
    ) -> None:
        """The backend's answer as a platform event, last in the apply's transaction: the
        version of the configuration it concerns, and whether it was applied or taken off
        the backend (a reset, a cancelled tenant). Only after an answer recorded under the
        lease: a pass whose lease was lost records nothing; one that only met an
        unavailable backend records nothing until the backend answers."""
        operation = "remove" if snapshot.remove else "apply"
        event = platform_event(
            action, "alerting", "config", version=snapshot.version, operation=operation, **data
        )
        await append(session, snapshot.tenant_id, event)


def build_alerting_reconciler(context: ReconcileContext) -> Reconciler[Any, Any] | None:
    from tenantplane.providers.alerting.factory import backend_from_settings

    settings = context.settings
    if settings.alerting_backend == "disabled":
        return None

    def build() -> AlertingBackend:
        backend = backend_from_settings(settings)
        context.close_on_stop(backend.aclose)
        return backend

    backend = context.shared("alerting", build)
    return AlertingReconciler(
        backend,
        context.database,
        settings.keyring(),
        backend_timeout_seconds=settings.alerting_backend_timeout_seconds,
    )
