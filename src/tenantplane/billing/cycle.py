"""The billing cycle: close ended periods into Draft invoices (idempotently).

Periods are calendar months in UTC. A tenant's first period starts when the tenant was
created; each next one starts where the previous invoice ended, so running the cycle twice
creates nothing new and a missed month is caught up on the next run. A cancelled tenant
(one with a final invoice) is never billed again.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import structlog
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.billing.context import BillingContext
from tenantplane.billing.metering import PricedPeriod, meter_clusters, month_end, price_period
from tenantplane.billing.models import (
    CreditEntry,
    Invoice,
    InvoiceKind,
    InvoiceLineItem,
    InvoicePhase,
)
from tenantplane.billing.repository import BillingRepository
from tenantplane.billing.schemas import money
from tenantplane.billing.usage import UsageReport
from tenantplane.cluster.models import ClusterHistory
from tenantplane.db.base import rfc3339
from tenantplane.db.clock import clock_of
from tenantplane.event.log import Draft, append_all, platform_event
from tenantplane.http.errors import Conflict
from tenantplane.reconcile import wake_after_commit
from tenantplane.tenant.models import Tenant

log = structlog.get_logger(__name__)

INVOICES_RECONCILER = "invoices"
# The kind of an invoice's events' resource (their name: the invoice's).
INVOICE = "invoice"
OBSERVABILITY_DEGRADED = "ObservabilityDegraded"
# Tenants closed together in a billing run: a few statements for all of them.
BATCH_TENANTS = 500
# Rows per multi-row INSERT (SQLite allows 32,766 parameters a statement).
INSERT_ROWS = 200


def issued_events(invoices: Sequence[Invoice]) -> list[tuple[int, Draft]]:
    """(tenant id, ``invoice.issued``) of invoices just issued, for ``append_all``:
    ``{billingPeriod: {start, end}, currency, total}``, money as the API shows it."""
    return [
        (
            invoice.tenant_id,
            platform_event(
                "invoice.issued",
                INVOICE,
                invoice.name,
                billingPeriod={
                    "start": rfc3339(invoice.period_start),
                    "end": rfc3339(invoice.period_end),
                },
                currency=invoice.currency,
                total=money(invoice.total),
            ),
        )
        for invoice in invoices
    ]


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


def _invoice_values(
    context: BillingContext,
    tenant_id: int,
    plan: str,
    name: str,
    kind: InvoiceKind,
    start: datetime,
    end: datetime,
    now: datetime,
    due: datetime,
) -> dict[str, Any]:
    """The invoice row's values but its amounts, currency and conditions."""
    return {
        "uid": uuid.uuid4().hex,
        "tenant_id": tenant_id,
        "name": name,
        "kind": kind.value,
        "plan": plan,
        "period_start": start,
        "period_end": end,
        "created_at": now,
        "phase": InvoicePhase.draft.value,
        "tax": Decimal("0.00"),
        # Due for the invoices reconciler at once when a provider can charge it (by the
        # database's clock: ``now`` is the billing instant, which an operator may set).
        "reconcile_at": due if context.provider.configured else None,
        "resource_version": 1,
    }


def _line_item_rows(invoice_id: int, priced: PricedPeriod) -> list[dict[str, Any]]:
    return [
        {
            "invoice_id": invoice_id,
            "position": position,
            "kind": line.kind,
            "description": line.description,
            "cluster": line.cluster,
            "quantity": line.quantity,
            "unit": line.unit,
            "unit_price": line.unit_price,
            "amount": line.amount,
        }
        for position, line in enumerate(priced.lines)
    ]


def _credit_use(
    tenant_id: int, amount: Decimal, invoice_id: int, invoice: str, now: datetime
) -> dict[str, Any]:
    return {
        "tenant_id": tenant_id,
        "amount": -amount,
        "invoice_id": invoice_id,
        "note": f"applied to {invoice}",
        "created_at": now,
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
    due = await clock_of(session).now()
    values = _invoice_values(
        context, tenant.id, tenant.plan.value, name, kind, start, end, now, due
    )
    values.update(
        currency=prices.currency,
        subtotal=subtotal,
        credits_applied=credit_applied,
        total=subtotal - credit_applied,
        conditions=[observability_condition(report, now)],
    )
    invoice_id = await repository.insert_invoice_once(values)
    if invoice_id is None:
        winner = await repository.invoice_for_period(tenant.id, start)
        if winner is None:  # the winner was deleted since (its tenant, by cascade)
            raise Conflict(f"the period of {tenant.name} starting {rfc3339(start)} changed")
        log.info("period closed by another run", tenant=tenant.name, invoice=winner.name)
        return winner, False
    await repository.insert_rows(InvoiceLineItem, _line_item_rows(invoice_id, priced))
    if credit_applied:
        await repository.insert_rows(
            CreditEntry, [_credit_use(tenant.id, credit_applied, invoice_id, name, now)]
        )
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


@dataclass(frozen=True)
class BillingSubject:
    """What closing a period needs of a tenant (plain values: they outlive a transaction)."""

    id: int
    name: str
    plan: str
    created_at: datetime


@dataclass
class _Draft:
    subject: BillingSubject
    priced: PricedPeriod
    credit_applied: Decimal
    values: dict[str, Any]


async def next_batch(session: AsyncSession, after: int) -> list[BillingSubject]:
    """The next batch of tenants to bill: those of id above ``after`` (0: the first batch).
    A run reads its tenants a batch at a time, so its memory does not grow with them."""
    repository = BillingRepository.from_session(session)
    rows = await repository.billing_subjects(after, BATCH_TENANTS)
    return [BillingSubject(row.id, row.name, str(row.plan), row.created_at) for row in rows]


async def close_ended_periods(
    session: AsyncSession, context: BillingContext, now: datetime
) -> list[Invoice]:
    """Close every period that has ended by ``now``, a batch of tenants at a time; last,
    the invoices' events (``invoice.issued``)."""
    issued: list[Invoice] = []
    after = 0
    while batch := await next_batch(session, after):
        issued += await close_batch_periods(session, context, batch, now)
        after = batch[-1].id
    await append_all(session, issued_events(issued))
    return issued


async def close_batch_periods(
    session: AsyncSession,
    context: BillingContext,
    subjects: Sequence[BillingSubject],
    now: datetime,
) -> list[Invoice]:
    """Close the ended periods of a batch of tenants with a few statements for all of them.
    When a concurrent change breaks a constraint (a run that named a period the same way, a
    tenant deleted meanwhile), the batch is undone and its tenants are closed one by one, a
    savepoint each, as before: such a tenant is skipped, not a failure of the whole run.
    The caller appends the issued invoices' events (``issued_events``) last in its
    transaction."""
    try:
        async with session.begin_nested():
            return await _close_together(session, context, subjects, now)
    except IntegrityError:
        log.info("a batch conflicted with a concurrent change", tenants=len(subjects))
    return await _close_one_by_one(session, context, subjects, now)


async def _close_one_by_one(
    session: AsyncSession,
    context: BillingContext,
    subjects: Sequence[BillingSubject],
    now: datetime,
) -> list[Invoice]:
    repository = BillingRepository.from_session(session)
    issued: list[Invoice] = []
    for subject in subjects:
        try:
            async with session.begin_nested():
                tenant = await repository.tenant(subject.id)
                if tenant is not None:
                    issued += await close_tenant_periods(session, context, tenant, now)
        except IntegrityError:
            log.info("periods closed concurrently by another run", tenant=subject.name)
    return issued


async def _close_together(
    session: AsyncSession,
    context: BillingContext,
    subjects: Sequence[BillingSubject],
    now: datetime,
) -> list[Invoice]:
    repository = BillingRepository.from_session(session)
    ids = [subject.id for subject in subjects]
    cancelled = await repository.tenants_with_final_invoice(ids)
    ends = await repository.last_period_ends(ids)
    balances = await repository.credit_balances(ids)
    due = {
        subject: ends.get(subject.id) or subject.created_at
        for subject in subjects
        if subject.id not in cancelled
    }
    invoice_ids: list[int] = []
    # Each round closes the next ended period of every tenant still due (a tenant catching
    # up on missed months takes one round per month).
    while due := {subject: start for subject, start in due.items() if month_end(start) <= now}:
        by_start: dict[datetime, list[BillingSubject]] = defaultdict(list)
        for subject, start in due.items():
            by_start[start].append(subject)
        following: dict[BillingSubject, datetime] = {}
        for start, group in by_start.items():
            created, next_starts = await _issue_group(session, context, group, start, now, balances)
            invoice_ids += created
            following.update(next_starts)
        due = following
    if invoice_ids and context.provider.configured:
        wake_after_commit(session, INVOICES_RECONCILER)
    issued: list[Invoice] = []
    for offset in range(0, len(invoice_ids), INSERT_ROWS):
        issued += await repository.invoices_by_ids(invoice_ids[offset : offset + INSERT_ROWS])
    issued.sort(key=lambda invoice: (invoice.tenant_id, invoice.period_start))
    return issued


async def _issue_group(
    session: AsyncSession,
    context: BillingContext,
    group: Sequence[BillingSubject],
    start: datetime,
    now: datetime,
    balances: dict[int, Decimal],
) -> tuple[list[int], dict[BillingSubject, datetime]]:
    """``issue_invoice`` for tenants whose period starts at the same instant: the new
    invoices' ids, and where each tenant's next period starts (a tenant cancelled meanwhile
    has none)."""
    repository = BillingRepository.from_session(session)
    end = month_end(start)
    drafts = await _draft_group(session, context, group, start, end, now, balances)
    inserted: dict[int, int] = {}
    for offset in range(0, len(drafts), INSERT_ROWS):
        chunk = drafts[offset : offset + INSERT_ROWS]
        inserted.update(await repository.insert_invoices_once([draft.values for draft in chunk]))
    line_items: list[dict[str, Any]] = []
    credit_uses: list[dict[str, Any]] = []
    next_starts: dict[BillingSubject, datetime] = {}
    for draft in drafts:
        subject = draft.subject
        invoice_id = inserted.get(subject.id)
        if invoice_id is None:
            # Another run closed the period first: its invoice decides, and the credit this
            # draft counted on is still there.
            balances[subject.id] = balances.get(subject.id, Decimal(0)) + draft.credit_applied
            winner = await repository.invoice_for_period(subject.id, start)
            if winner is None:  # the winner was deleted since (its tenant, by cascade)
                raise Conflict(f"the period of {subject.name} starting {rfc3339(start)} changed")
            log.info("period closed by another run", tenant=subject.name, invoice=winner.name)
            if winner.kind != InvoiceKind.final.value:  # cancelled meanwhile: billing ends
                next_starts[subject] = winner.period_end
            continue
        line_items += _line_item_rows(invoice_id, draft.priced)
        if draft.credit_applied:
            credit_uses.append(
                _credit_use(subject.id, draft.credit_applied, invoice_id, draft.values["name"], now)
            )
        next_starts[subject] = end
        log.info(
            "invoice issued",
            tenant=subject.name,
            invoice=draft.values["name"],
            subtotal=str(draft.priced.subtotal),
        )
    await repository.insert_rows(InvoiceLineItem, line_items)
    await repository.insert_rows(CreditEntry, credit_uses)
    return [inserted[draft.subject.id] for draft in drafts if draft.subject.id in inserted], (
        next_starts
    )


async def _draft_group(
    session: AsyncSession,
    context: BillingContext,
    group: Sequence[BillingSubject],
    start: datetime,
    end: datetime,
    now: datetime,
    balances: dict[int, Decimal],
) -> list[_Draft]:
    """Meter and price the period of each tenant in ``group`` and apply its credit (taken
    off ``balances``)."""
    repository = BillingRepository.from_session(session)
    due = await clock_of(session).now()
    ids = [subject.id for subject in group]
    history: dict[int, list[ClusterHistory]] = defaultdict(list)
    for row in await repository.histories_for_period(ids, start, end):
        history[row.tenant_id].append(row)
    candidates = [
        invoice_name(subject.name, start, InvoiceKind.regular, set()) for subject in group
    ]
    taken = await repository.taken_invoice_names(ids, candidates)
    drafts = []
    for subject in group:
        prices = context.prices.for_plan(subject.plan)
        meters = tuple(meter.name for meter in prices.meters)
        report = await context.usage.usage(subject.name, meters, start, end)
        priced = price_period(
            prices, start, end, meter_clusters(history[subject.id], start, end), report.quantities
        )
        balance = balances.get(subject.id, Decimal(0))
        credit_applied = min(max(balance, Decimal(0)), priced.subtotal).quantize(Decimal("0.01"))
        balances[subject.id] = balance - credit_applied
        names = {name for tenant_id, name in taken if tenant_id == subject.id}
        name = invoice_name(subject.name, start, InvoiceKind.regular, names)
        values = _invoice_values(
            context, subject.id, subject.plan, name, InvoiceKind.regular, start, end, now, due
        )
        values.update(
            currency=prices.currency,
            subtotal=priced.subtotal,
            credits_applied=credit_applied,
            total=priced.subtotal - credit_applied,
            conditions=[observability_condition(report, now)],
        )
        drafts.append(_Draft(subject, priced, credit_applied, values))
    return drafts


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
