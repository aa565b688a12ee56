"""Charging Draft invoices through the provider, and applying provider outcomes.

Every write of a provider outcome goes through ``BillingRepository.advance_invoice``: an
invoice only moves forwards (Draft → Billed → PastDue → Paid, Paid is final), whichever
arrives first of the charge's own answer and the webhooks about it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.billing.attempts import ChargeAttempts
from tenantplane.billing.cycle import INVOICE
from tenantplane.billing.models import ChargeAttemptOutcome, Invoice, InvoicePhase
from tenantplane.billing.repository import Advanced, BillingRepository
from tenantplane.billing.schemas import money
from tenantplane.db.clock import clock_of
from tenantplane.event.log import append, platform_event
from tenantplane.providers.payment import ChargeRequest, ProviderTransaction
from tenantplane.reconcile import Fence, LeaseGuard

# The charge's own answer has no event time: any webhook about it counts as newer.
CHARGE_ANSWER_TIME = datetime(1970, 1, 1, tzinfo=UTC)
RETRY_BASE_SECONDS = 60
RETRY_MAX_SECONDS = 3600

_PHASE_OF_STATUS = {
    "draft": InvoicePhase.billed,
    "ready": InvoicePhase.billed,
    "billed": InvoicePhase.billed,
    "paid": InvoicePhase.paid,
    "completed": InvoicePhase.paid,
    "past_due": InvoicePhase.past_due,
}


def phase_for_status(status: str) -> InvoicePhase:
    """Our phase for a provider transaction status (canceled and unknown ones: Billed)."""
    return _PHASE_OF_STATUS.get(status, InvoicePhase.billed)


_PHASE_EVENTS = {InvoicePhase.paid: "invoice.paid", InvoicePhase.past_due: "invoice.past_due"}


async def advance_invoice(
    session: AsyncSession,
    invoice_id: int,
    target: InvoicePhase,
    occurred_at: datetime,
    values: dict[str, Any],
) -> Advanced | None:
    """``BillingRepository.advance_invoice``, and the invoice's event when it entered Paid
    or PastDue (``invoice.paid``, ``invoice.past_due``: ``{currency, total}``), appended in
    this transaction, after the invoice's row is written."""
    advanced = await BillingRepository.from_session(session).advance_invoice(
        invoice_id, target, occurred_at, values
    )
    action = _PHASE_EVENTS.get(target)
    if advanced is not None and advanced.phase_changed and action is not None:
        data = {"currency": advanced.currency, "total": money(advanced.total)}
        event = platform_event(action, INVOICE, advanced.name, **data)
        await append(session, advanced.tenant_id, event)
    return advanced


def settled_values(transaction: ProviderTransaction) -> dict[str, Any]:
    """Amounts and number the provider reports once paid (absent values keep ours)."""
    values: dict[str, Any] = {}
    if transaction.tax is not None:
        values["tax"] = transaction.tax
    if transaction.total is not None:
        values["total"] = transaction.total
    if transaction.invoice_number:
        values["provider_invoice_number"] = transaction.invoice_number
    return values


@dataclass(frozen=True)
class ChargeSnapshot:
    invoice_id: int
    attempts: int
    request: ChargeRequest


@dataclass(frozen=True)
class ChargeOutcome:
    transaction: ProviderTransaction | None
    #: The attempt recorded before the provider was called.
    attempt_id: int
    error: str = ""
    #: The transaction was found (made by an earlier attempt), not created by this one.
    adopted: bool = False


async def load_charge(session: AsyncSession, invoice_id: int) -> ChargeSnapshot | None:
    """What charging an invoice needs; None when it is not an uncharged Draft or its tenant
    has no billing profile yet (``billing link`` makes it due again)."""
    repository = BillingRepository.from_session(session)
    invoice = await repository.invoice_by_id(invoice_id)
    if invoice is None or invoice.phase != InvoicePhase.draft or invoice.provider_transaction_id:
        return None
    profile = await repository.profile(invoice.tenant_id)
    tenant = await repository.tenant(invoice.tenant_id)
    if profile is None or tenant is None:
        return None
    return ChargeSnapshot(
        invoice_id=invoice.id,
        attempts=invoice.charge_attempts,
        request=ChargeRequest(
            invoice_uid=invoice.uid,
            invoice_name=invoice.name,
            tenant=tenant.name,
            customer_id=profile.customer_id,
            address_id=profile.address_id,
            currency=invoice.currency,
            amount=invoice.net,
            description=_description(invoice),
            period_start=invoice.period_start,
            period_end=invoice.period_end,
            # Lowered to the first charge attempt's start, when earlier, by ``begin_attempt``.
            earliest_charge=invoice.created_at,
        ),
    )


def _description(invoice: Invoice) -> str:
    return (
        f"Invoice {invoice.name}: subtotal {invoice.subtotal:.2f}, "
        f"credits {invoice.credits_applied:.2f} {invoice.currency}"
    )


def retry_delay(attempts: int) -> float:
    return float(min(RETRY_BASE_SECONDS * 2 ** max(attempts - 1, 0), RETRY_MAX_SECONDS))


async def begin_attempt(snapshot: ChargeSnapshot, fence: Fence) -> tuple[int, ChargeRequest]:
    """The intent, before any provider call: the attempt counted on the invoice and recorded
    as pending, in one transaction that proves the lease is held (and holds it a full term
    more). A successor that finds it knows a call may have been made. Returns the attempt
    and the request whose search reaches back to the invoice's first attempt (an invoice
    issued as of a later instant, ``billing run --now``, may have been charged before)."""
    async with fence.held(charge_attempts=snapshot.attempts + 1) as session:
        attempts = ChargeAttempts(session)
        now = await clock_of(session).now()
        attempt = await attempts.begin(snapshot.invoice_id, fence.token, now)
        first = await attempts.first_started(snapshot.invoice_id)
    request = snapshot.request
    return attempt, replace(request, earliest_charge=min(request.earliest_charge, first))


async def apply_charge(
    session: AsyncSession, guard: LeaseGuard, snapshot: ChargeSnapshot, outcome: ChargeOutcome
) -> None:
    attempts = snapshot.attempts + 1
    transaction = outcome.transaction
    now = await guard.now()
    if transaction is None:
        failed = await guard.update(
            reconcile_at=now + timedelta(seconds=retry_delay(attempts)),
            charge_attempts=attempts,
            last_charge_error=outcome.error[:2000],
        )
        if failed:
            await ChargeAttempts(session).finish(
                outcome.attempt_id, ChargeAttemptOutcome.failed, now, error=outcome.error
            )
        return
    recorded = await guard.update(
        reconcile_at=None,
        provider_transaction_id=transaction.id,
        charge_attempts=attempts,
        last_charge_error="",
        resource_version=Invoice.resource_version + 1,
    )
    if not recorded:
        return
    await ChargeAttempts(session).finish(
        outcome.attempt_id,
        ChargeAttemptOutcome.adopted if outcome.adopted else ChargeAttemptOutcome.charged,
        now,
        transaction_id=transaction.id,
    )
    target = phase_for_status(transaction.status)
    values = settled_values(transaction) if target is InvoicePhase.paid else {}
    # With its event (invoice.paid, invoice.past_due) when the phase changes.
    await advance_invoice(session, snapshot.invoice_id, target, CHARGE_ANSWER_TIME, values)
