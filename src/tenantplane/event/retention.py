"""Retention: each tenant's events older than its plan keeps are purged by the worker.

The reconciler's rows are the tenants' chain heads (``event_chains``): each is due an hour
after its first event, then every hour. A purge deletes the oldest events and records the
hash of the last one deleted, so the kept chain still verifies (event/service.py).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, ClassVar

from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.schema import Table

from tenantplane.catalogue.plans import PlanCatalogue, load_plans
from tenantplane.event.models import EventChain
from tenantplane.event.service import purge
from tenantplane.reconcile.fence import Fence
from tenantplane.reconcile.lease import LeaseGuard
from tenantplane.reconcile.reconciler import Reconciler
from tenantplane.reconcile.registry import ReconcileContext
from tenantplane.tenant.models import Plan, Tenant

RETENTION = "event-retention"
# How often a tenant's events are looked at: a purge is at most this late.
CHECK_EVERY = timedelta(hours=1)


class RetentionReconciler(Reconciler[tuple[int, Plan], None]):
    name: ClassVar[str] = RETENTION
    table: ClassVar[Table] = EventChain.__table__  # type: ignore[assignment]
    concurrency = 2
    lease_seconds = 300.0
    error_backoff_seconds = 300.0

    def __init__(self, plans: PlanCatalogue) -> None:
        self.plans = plans

    async def load(self, session: AsyncSession, row_id: Any) -> tuple[int, Plan] | None:
        tenant = await session.get(Tenant, row_id)
        return None if tenant is None else (tenant.id, tenant.plan)

    async def act(self, snapshot: tuple[int, Plan], fence: Fence) -> None:
        return None

    async def apply(
        self, session: AsyncSession, guard: LeaseGuard, snapshot: tuple[int, Plan], outcome: None
    ) -> None:
        now = await guard.now()
        if not await guard.update(reconcile_at=now + CHECK_EVERY):
            return
        tenant_id, plan = snapshot
        await purge(session, tenant_id, now, self.plans.plans[plan].events.retention_days)


def build_retention_reconciler(context: ReconcileContext) -> Reconciler[Any, Any] | None:
    return RetentionReconciler(load_plans(context.settings.plans_file))
