"""The billing cycle: close ended periods into Draft invoices (idempotently).

Periods are calendar months in UTC. A tenant's first period starts when the tenant was
created; each next one starts where the previous invoice ended, so running the cycle twice
creates nothing new and a missed month is caught up on the next run. A cancelled tenant
(one with a final invoice) is never billed again.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal

import structlog
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.billing.context import BillingContext
from tenantplane.billing.metering import meter_clusters, month_end, price_period
from tenantplane.billing.models import (
    CreditEntry,
    Invoice,
    InvoiceKind,
    InvoiceLineItem,
    InvoicePhase,
)
from tenantplane.billing.repository import BillingRepository
from tenantplane.billing.usage import UsageReport
from tenantplane.db.base import rfc3339, utcnow
from tenantplane.http.errors import Conflict
from tenantplane.reconcile import wake_after_commit
from tenantplane.tenant.models import Tenant

log = structlog.get_logger(__name__)

INVOICES_RECONCILER = "invoices"
OBSERVABILITY_DEGRADED = "ObservabilityDegraded"


def invoice_name(tenant: str, start: datetime, kind: InvoiceKind, taken: set[str]) -> str:
    """``{tenant}-{YYYYMMDD}`` by period start; ``-final`` appended for a final invoice; the
    ``{tenant}-{YYYYMMDD-HHMMSS}`` form when another period already starts on that date."""
    day = f"{tenant}-{start:%Y%m%d}"
    precise = f"{tenant}-{start:%Y%m%d-%H%M%S}"
    suffix = "-final" if kind is InvoiceKind.final else ""
    name = day + suffix
    return precise + suffix if name in taken else name


def observability_condition(report: UsageReport, now: datetime) -> dict[str, str]:
    if not report.complete:
        status, reason, message = "True", report.reason, report.message
    elif not report.configured:
        status, reason, message = "False", "NoUsageSource", "no metered usage source configured"
    else:
        status, reason, message = "False", "UsageComplete", "usage data covers the whole period"
    return {
        "type": OBSERVABILITY_DEGRADED,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": rfc3339(now),
    }


async def issue_invoice(
    session: AsyncSession,
    context: BillingContext,
    tenant: Tenant,
    start: datetime,
    end: datetime,
    kind: InvoiceKind,
    now: datetime,
) -> tuple[Invoice, bool]:
    """Meter and price [start, end), apply promotional credit and add the Draft invoice.

    Idempotent: when the tenant already has an invoice starting at ``start`` (another run
    closed the period first, even one that committed while this one was metering), that
    invoice is returned with False and nothing is added; the database decides, not a read
    made before the write."""
    repository = BillingRepository.from_session(session)
    prices = context.prices.for_plan(tenant.plan.value)
    history = await repository.history_for_period(tenant.id, start, end)
    meters = tuple(meter.name for meter in prices.meters)
    report = await context.usage.usage(tenant.name, meters, start, end)
    priced = price_period(
        prices, start, end, meter_clusters(history, start, end), report.quantities
    )
    subtotal = priced.subtotal
    balance = await repository.credit_balance(tenant.id)
    credit_applied = min(max(balance, Decimal(0)), subtotal).quantize(Decimal("0.01"))
    name = invoice_name(tenant.name, start, kind, await repository.invoice_names(tenant.id))
    invoice_id = await repository.insert_invoice_once(
        {
            "uid": uuid.uuid4().hex,
            "tenant_id": tenant.id,
            "name": name,
            "kind": kind.value,
            "plan": tenant.plan.value,
            "period_start": start,
            "period_end": end,
            "created_at": now,
            "phase": InvoicePhase.draft.value,
            "currency": prices.currency,
            "subtotal": subtotal,
            "credits_applied": credit_applied,
            "tax": Decimal("0.00"),
            "total": subtotal - credit_applied,
            "conditions": [observability_condition(report, now)],
            # Due for the invoices reconciler at once when a provider can charge it.
            "reconcile_at": utcnow() if context.provider.configured else None,
            "resource_version": 1,
        }
    )
    if invoice_id is None:
        winner = await repository.invoice_for_period(tenant.id, start)
        if winner is None:  # the winner was deleted since (its tenant, by cascade)
            raise Conflict(f"the period of {tenant.name} starting {rfc3339(start)} changed")
        log.info("period closed by another run", tenant=tenant.name, invoice=winner.name)
        return winner, False
    for position, line in enumerate(priced.lines):
        repository.add(
            InvoiceLineItem(
                invoice_id=invoice_id,
                position=position,
                kind=line.kind,
                description=line.description,
                cluster=line.cluster,
                quantity=line.quantity,
                unit=line.unit,
                unit_price=line.unit_price,
                amount=line.amount,
            )
        )
    if credit_applied:
        repository.add(
            CreditEntry(
                tenant_id=tenant.id,
                amount=-credit_applied,
                invoice_id=invoice_id,
                note=f"applied to {name}",
                created_at=now,
            )
        )
    await session.flush()
    invoice = await repository.invoice_by_id(invoice_id)
    assert invoice is not None
    if context.provider.configured:
        wake_after_commit(session, INVOICES_RECONCILER)
    log.info("invoice issued", tenant=tenant.name, invoice=name, subtotal=str(subtotal))
    return invoice, True


async def close_tenant_periods(
    session: AsyncSession, context: BillingContext, tenant: Tenant, now: datetime
) -> list[Invoice]:
    """Issue the tenant's ended periods; returns the invoices this call created (periods
    another run closed meanwhile are skipped, and the next one starts where theirs ended)."""
    repository = BillingRepository.from_session(session)
    if await repository.has_final_invoice(tenant.id):
        return []
    start = await repository.last_period_end(tenant.id) or tenant.created_at
    issued = []
    while (end := month_end(start)) <= now:
        invoice, created = await issue_invoice(
            session, context, tenant, start, end, InvoiceKind.regular, now
        )
        if created:
            issued.append(invoice)
        if invoice.kind == InvoiceKind.final.value:  # cancelled meanwhile: billing ends
            break
        start = invoice.period_end
    return issued


async def close_ended_periods(
    session: AsyncSession, context: BillingContext, now: datetime
) -> list[Invoice]:
    """Close every period that has ended by ``now``, tenant by tenant (a savepoint each: a
    tenant closed concurrently by another run is skipped, not a failure of the whole run)."""
    issued: list[Invoice] = []
    tenants: Sequence[Tenant] = await BillingRepository.from_session(session).tenants()
    for tenant in tenants:
        try:
            async with session.begin_nested():
                issued += await close_tenant_periods(session, context, tenant, now)
        except IntegrityError:
            log.info("periods closed concurrently by another run", tenant=tenant.name)
    return issued


async def cancel_tenant(
    session: AsyncSession, context: BillingContext, tenant: Tenant, now: datetime
) -> list[Invoice]:
    """Close ended periods, then issue the final invoice for usage since the last one.
    Returns every invoice issued, the final one last."""
    repository = BillingRepository.from_session(session)
    if await repository.has_final_invoice(tenant.id):
        raise Conflict(f"tenant {tenant.name} is already cancelled", code="TENANT_CANCELLED")
    issued = await close_tenant_periods(session, context, tenant, now)
    start = await repository.last_period_end(tenant.id) or tenant.created_at
    while True:
        invoice, created = await issue_invoice(
            session, context, tenant, start, max(start, now), InvoiceKind.final, now
        )
        if created:
            issued.append(invoice)
        if invoice.kind == InvoiceKind.final.value:
            return issued
        # A billing run closed the period that ended meanwhile: the final one follows it.
        start = invoice.period_end
