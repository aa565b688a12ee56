"""Billing's reconcilers:

* ``invoices``: charges Draft invoices through the payment provider (only when one is
  configured), retrying failures with exponential backoff;
* ``billing-events``: applies stored provider webhooks;
* ``billing-cycle``: the scheduled run of the billing cycle; its single row is due at the
  end of each calendar month, when it closes ended periods like ``tenantplane billing run``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.schema import Table

from tenantplane.billing.charging import (
    ChargeOutcome,
    ChargeSnapshot,
    apply_charge,
    begin_attempt,
    load_charge,
)
from tenantplane.billing.context import BillingContext
from tenantplane.billing.cycle import INVOICES_RECONCILER, close_ended_periods
from tenantplane.billing.metering import month_end
from tenantplane.billing.models import BillingSchedule, Invoice, ProviderEvent
from tenantplane.billing.webhooks import EVENTS_RECONCILER, apply_event, record_outcome
from tenantplane.db.clock import clock_of
from tenantplane.providers.payment import ProviderUnavailable
from tenantplane.reconcile import Fence, LeaseGuard, Reconciler, wake_after_commit
from tenantplane.reconcile.registry import ReconcileContext

CYCLE_RECONCILER = "billing-cycle"


class InvoiceReconciler(Reconciler[ChargeSnapshot, ChargeOutcome]):
    name: ClassVar[str] = INVOICES_RECONCILER
    table: ClassVar[Table] = Invoice.__table__  # type: ignore[assignment]
    concurrency = 4

    def __init__(self, context: BillingContext) -> None:
        self.context = context
        # The provider call (with its own timeout) must end well within the lease.
        self.lease_seconds = max(context.lease_seconds, 3 * _provider_timeout(context))

    async def load(self, session: AsyncSession, row_id: Any) -> ChargeSnapshot | None:
        return await load_charge(session, int(row_id))

    async def act(self, snapshot: ChargeSnapshot, fence: Fence) -> ChargeOutcome:
        provider = self.context.provider
        attempt, request = await begin_attempt(snapshot, fence)
        try:
            # Always, whatever was recorded: an earlier call (of a worker that died or froze
            # after the provider accepted it, or whose answer was lost) may have made the
            # charge. Paddle does not deduplicate creates: this look-up is what does.
            found = await provider.find_charge(request)
            if found is not None:
                return ChargeOutcome(found, attempt, adopted=True)
            await fence.hold()
            return ChargeOutcome(await provider.create_charge(request), attempt)
        except ProviderUnavailable as exc:
            return ChargeOutcome(None, attempt, exc.detail)

    async def apply(
        self,
        session: AsyncSession,
        guard: LeaseGuard,
        snapshot: ChargeSnapshot,
        outcome: ChargeOutcome,
    ) -> None:
        await apply_charge(session, guard, snapshot, outcome)


def _provider_timeout(context: BillingContext) -> float:
    return float(getattr(context.provider, "timeout", 10.0))


class EventReconciler(Reconciler[int, None]):
    name: ClassVar[str] = EVENTS_RECONCILER
    table: ClassVar[Table] = ProviderEvent.__table__  # type: ignore[assignment]
    # One at a time keeps events of one transaction in arrival order (rank rules make any
    # order safe; this only keeps the outcome log readable).
    concurrency = 1

    def __init__(self, context: BillingContext) -> None:
        self.context = context

    async def load(self, session: AsyncSession, row_id: Any) -> int | None:
        event = await session.get(ProviderEvent, row_id)
        return None if event is None or event.processed_at is not None else event.id

    async def act(self, snapshot: int, fence: Fence) -> None:
        return None

    async def apply(
        self, session: AsyncSession, guard: LeaseGuard, snapshot: int, outcome: None
    ) -> None:
        if not await guard.update(processed_at=await guard.now(), reconcile_at=None):
            return
        event = await session.get(ProviderEvent, snapshot)
        if event is not None:
            result = await apply_event(session, self.context.provider, event)
            await record_outcome(session, event.id, result)


class CycleReconciler(Reconciler[datetime, None]):
    name: ClassVar[str] = CYCLE_RECONCILER
    table: ClassVar[Table] = BillingSchedule.__table__  # type: ignore[assignment]
    concurrency = 1
    lease_seconds = 300.0
    error_backoff_seconds = 60.0

    def __init__(self, context: BillingContext) -> None:
        self.context = context

    async def load(self, session: AsyncSession, row_id: Any) -> datetime | None:
        return await clock_of(session).now()

    async def act(self, snapshot: datetime, fence: Fence) -> None:
        return None

    async def apply(
        self, session: AsyncSession, guard: LeaseGuard, snapshot: datetime, outcome: None
    ) -> None:
        if not await guard.update(reconcile_at=month_end(snapshot), last_run_at=snapshot):
            return
        if await close_ended_periods(session, self.context, snapshot):
            wake_after_commit(session, INVOICES_RECONCILER)


def shared_billing(context: ReconcileContext) -> BillingContext:
    """One billing context (one provider, one connection pool) for the process's reconcilers."""

    def build() -> BillingContext:
        billing = BillingContext.from_settings(context.settings)
        context.close_on_stop(billing.provider.aclose)
        return billing

    return context.shared("billing", build)


def build_invoice_reconciler(context: ReconcileContext) -> Reconciler[Any, Any] | None:
    billing = shared_billing(context)
    return InvoiceReconciler(billing) if billing.provider.configured else None


def build_event_reconciler(context: ReconcileContext) -> Reconciler[Any, Any] | None:
    billing = shared_billing(context)
    return EventReconciler(billing) if billing.provider.accepts_webhooks else None


def build_cycle_reconciler(context: ReconcileContext) -> Reconciler[Any, Any] | None:
    return CycleReconciler(shared_billing(context))
