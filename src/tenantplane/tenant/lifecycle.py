"""Tenant lifecycle: suspension, resumption and cancellation (docs/security.md).

A tenant is active, suspended (read-only until resumed) or cancelled (read-only for good).
The API refuses the writes of a tenant that is not active in one place, the access check
(``tenantplane.access``). The operator suspends and resumes; the payment provider's
subscription news suspends and resumes too, but lifts only a suspension it caused.
Cancelling withdraws what the tenant runs: its clusters are deleted, its secrets' sync
targets removed, its alerting configuration taken off the backend, and billing closes with
the final invoice, which ends at the cancellation time. Services never commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.alerting import service as alerting_service
from tenantplane.billing.context import BillingContext
from tenantplane.billing.cycle import cancel_tenant, issued_events
from tenantplane.billing.models import Invoice
from tenantplane.cluster import service as cluster_service
from tenantplane.db.clock import clock_of
from tenantplane.event.log import OPERATOR, SYSTEM, Actor, Draft, EventType, append, append_all
from tenantplane.http.errors import Conflict, NotFound
from tenantplane.providers.alerting.base import AlertingBackend
from tenantplane.secret import service as secret_service
from tenantplane.tenant.models import SuspendedBy, Tenant, TenantState
from tenantplane.tenant.repository import TenantRepository

log = structlog.get_logger(__name__)


class AlreadyCancelled(Conflict):
    def __init__(self, name: str) -> None:
        super().__init__(f"tenant {name} is already cancelled", code="TENANT_CANCELLED")


@dataclass(frozen=True)
class Cancellation:
    """What cancelling a tenant did."""

    tenant: Tenant
    invoices: list[Invoice]  # issued now, the final one last
    clusters_deleted: list[str]
    secrets_withdrawn: list[str]
    alerting_withdrawn: bool


async def locked_tenant(session: AsyncSession, name: str) -> Tenant:
    """The tenant named ``name``, its writes held off until this transaction ends."""
    tenant = await TenantRepository.from_session(session).lock_for_state_change(name)
    if tenant is None:
        raise NotFound(f"tenant {name}")
    return tenant


def _event(action: str, tenant: Tenant, by: SuspendedBy) -> Draft:
    """A platform event of the tenant's state (``tenant.suspended``, ``tenant.resumed``,
    ``tenant.cancelled``) with who caused it: the operator (their CLI, the actor) or the
    payment provider's news (the system)."""
    actor: Actor = OPERATOR if by is SuspendedBy.operator else SYSTEM
    return Draft(EventType.platform, action, "tenant", tenant.name, actor, {"by": by.value})


def _enter(tenant: Tenant, state: TenantState, at: datetime, by: SuspendedBy | None) -> None:
    if tenant.state is not state:
        tenant.state_changed_at = at
    tenant.state = state
    tenant.suspended_by = by
    log.info(
        "tenant state",
        tenant=tenant.name,
        state=state.value,
        suspended_by=by.value if by else None,
    )


async def suspend(session: AsyncSession, name: str) -> Tenant:
    """Operator suspension: read-only until an operator resumes it (idempotent)."""
    tenant = await locked_tenant(session, name)
    if tenant.state is TenantState.cancelled:
        raise AlreadyCancelled(name)
    if tenant.suspended_by is not SuspendedBy.operator:
        # Also when the payment provider had suspended it: only an operator lifts it now.
        _enter(tenant, TenantState.suspended, await clock_of(session).now(), SuspendedBy.operator)
        await session.flush()
        await append(session, tenant.id, _event("tenant.suspended", tenant, SuspendedBy.operator))
    return tenant


async def resume(session: AsyncSession, name: str) -> Tenant:
    """Lift any suspension, the payment provider's included (idempotent)."""
    tenant = await locked_tenant(session, name)
    if tenant.state is TenantState.cancelled:
        raise AlreadyCancelled(name)
    if tenant.state is TenantState.suspended:
        _enter(tenant, TenantState.active, await clock_of(session).now(), None)
        await session.flush()
        await append(session, tenant.id, _event("tenant.resumed", tenant, SuspendedBy.operator))
    return tenant


async def apply_payment_standing(
    session: AsyncSession, name: str, past_due: bool, occurred_at: datetime
) -> str:
    """The payment provider's news about the tenant's subscription: past due suspends an
    active tenant; paid up again resumes a tenant that the provider suspended (an operator's
    suspension stays). News older than the last applied changes nothing. Returns what
    happened, for the event's outcome."""
    tenant = await locked_tenant(session, name)
    if tenant.state is TenantState.cancelled:
        return f"ignored: {name} is cancelled"
    if tenant.payment_event_at is not None and occurred_at <= tenant.payment_event_at:
        return f"ignored: {name} has newer subscription news"
    tenant.payment_event_at = occurred_at
    outcome = f"recorded: {name} stays {tenant.state.value}"
    event = None
    if past_due and tenant.state is TenantState.active:
        _enter(tenant, TenantState.suspended, occurred_at, SuspendedBy.payment)
        outcome = f"applied: {name} suspended"
        event = _event("tenant.suspended", tenant, SuspendedBy.payment)
    elif not past_due and tenant.suspended_by is SuspendedBy.payment:
        _enter(tenant, TenantState.active, occurred_at, None)
        outcome = f"applied: {name} resumed"
        event = _event("tenant.resumed", tenant, SuspendedBy.payment)
    await session.flush()
    if event is not None:
        await append(session, tenant.id, event)
    return outcome


async def cancel(
    session: AsyncSession,
    name: str,
    now: datetime,
    *,
    billing: BillingContext,
    alerting: AlertingBackend,
) -> Cancellation:
    """Cancel the tenant as of ``now``; everything in this transaction. Taking the alerting
    configuration off the backend is queued for after commit (the ``alerting`` reconciler,
    retried until the backend answers): no lock is held across the backend call. Last, the
    events: ``tenant.cancelled``, its clusters' phase changes (Terminating), its invoices
    issued."""
    tenant = await locked_tenant(session, name)
    if tenant.state is TenantState.cancelled:
        raise AlreadyCancelled(name)
    _enter(tenant, TenantState.cancelled, now, None)
    await session.flush()
    clusters = await cluster_service.delete_all(session, tenant.id)
    secrets = await secret_service.withdraw_all(session, tenant.id)
    invoices = await cancel_tenant(session, billing, tenant, now)
    withdrawn = await alerting_service.withdraw(
        session, alerting, alerting_service.TenantRef(tenant.id, tenant.name)
    )
    cancelled = _event("tenant.cancelled", tenant, SuspendedBy.operator)
    await append_all(
        session,
        [
            (tenant.id, cancelled),
            *((tenant.id, change) for change in clusters),
            *issued_events(invoices),
        ],
    )
    names = [change.name for change in clusters]
    return Cancellation(tenant, invoices, names, secrets, withdrawn)
