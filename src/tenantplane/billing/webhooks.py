"""Provider webhooks: verify, store once by event id, apply asynchronously.

The HTTP handler only verifies the signature and inserts the event (insert … on conflict do
nothing), then answers 200 at once; the billing-events reconciler applies it. Applying is
idempotent and never moves an invoice backwards, so duplicates and reordering are harmless.

Transaction events move invoices, once the transaction is shown to be the invoice's charge:
the tenant's customer, the invoice's currency and its net amount, and the transaction the
invoice already points at (if any). Paddle signs every event of the account, including
checkouts any customer can start with custom data of their choosing, so a signature alone
does not make a transaction this invoice's payment. Subscription events
(``subscription.*``) carry the subscription's status: ``past_due`` suspends its tenant,
``active`` resumes a tenant the provider suspended (tenant/lifecycle.py); older news than
the last applied changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

import structlog
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.billing.charging import advance_invoice, settled_values
from tenantplane.billing.models import BillingProfile, Invoice, InvoicePhase, ProviderEvent
from tenantplane.billing.repository import BillingRepository
from tenantplane.db.clock import clock_of
from tenantplane.http.errors import ApiError, ValidationFailed
from tenantplane.providers.payment import (
    BillingNotConfigured,
    PaymentProvider,
    ProviderTransaction,
)
from tenantplane.reconcile import wake_after_commit
from tenantplane.tenant import lifecycle

log = structlog.get_logger(__name__)

EVENTS_RECONCILER = "billing-events"
SUBSCRIPTION_EVENTS = "subscription."
# Subscription statuses that say whether the tenant's payments are in order.
SUBSCRIPTION_PAST_DUE = "past_due"
SUBSCRIPTION_ACTIVE = "active"

EVENT_PHASES = {
    "transaction.billed": InvoicePhase.billed,
    "transaction.past_due": InvoicePhase.past_due,
    "transaction.payment_failed": InvoicePhase.past_due,
    "transaction.paid": InvoicePhase.paid,
    "transaction.completed": InvoicePhase.paid,
}


class WebhookSignatureInvalid(ApiError):
    def __init__(self) -> None:
        super().__init__(
            401,
            "the webhook signature is missing, invalid or outside the allowed time window",
            code="WEBHOOK_SIGNATURE_INVALID",
        )


def _parse(body: bytes) -> dict[str, Any]:
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ValidationFailed("the event is not JSON", field=None, code="MALFORMED_JSON") from None
    if not isinstance(document, dict):
        raise ValidationFailed("the event must be a JSON object", field=None)
    for field in ("event_id", "event_type", "occurred_at"):
        if not isinstance(document.get(field), str) or not document[field]:
            raise ValidationFailed(f"{field} is required", field=field)
    if not isinstance(document.get("data"), dict):
        raise ValidationFailed("data is required", field="data")
    return document


def _occurred_at(value: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationFailed("occurred_at is not RFC 3339", field="occurred_at") from None
    if parsed.tzinfo is None:
        raise ValidationFailed("occurred_at needs a time zone", field="occurred_at")
    return parsed


async def receive(
    session: AsyncSession, provider: PaymentProvider, headers: Mapping[str, str], body: bytes
) -> bool:
    """Verify and store one delivery; False when the event id was seen before."""
    if not provider.accepts_webhooks:
        raise BillingNotConfigured()
    if not provider.verify_webhook(headers, body):
        raise WebhookSignatureInvalid()
    document = _parse(body)
    now = await clock_of(session).now()
    inserted = await BillingRepository.from_session(session).insert_event_once(
        {
            "provider": provider.name,
            "event_id": document["event_id"][:64],
            "event_type": document["event_type"][:64],
            "occurred_at": _occurred_at(document["occurred_at"]),
            "received_at": now,
            "payload": document,
            "outcome": "",
            "reconcile_at": now,
        }
    )
    if inserted:
        wake_after_commit(session, EVENTS_RECONCILER)
    return inserted


async def apply_event(
    session: AsyncSession, provider: PaymentProvider, event: ProviderEvent
) -> str:
    """Apply one stored event to its invoice or tenant; returns what happened (kept on the
    event)."""
    if event.event_type.startswith(SUBSCRIPTION_EVENTS):
        return await _apply_subscription_event(session, provider, event)
    target = EVENT_PHASES.get(event.event_type)
    if target is None:
        return "ignored: event type not used by billing"
    data = event.payload.get("data")
    if not isinstance(data, dict):
        return "ignored: no data"
    transaction = provider.parse_transaction(data)
    repository = BillingRepository.from_session(session)
    invoice = await repository.find_for_transaction(transaction.id, transaction.invoice_uid)
    if invoice is None:
        return "ignored: no invoice for this transaction"
    mismatch = transaction_mismatch(
        invoice, await repository.profile(invoice.tenant_id), transaction
    )
    if mismatch:
        log.warning(
            "payment event refused: the transaction is not this invoice's charge",
            event_id=event.event_id,
            event_type=event.event_type,
            invoice=invoice.name,
            transaction=transaction.id[:64],
            mismatch=mismatch,
        )
        return f"refused: {mismatch} ({invoice.name} unchanged)"
    values: dict[str, Any] = {
        "provider_transaction_id": transaction.id or invoice.provider_transaction_id
    }
    if target is InvoicePhase.paid:
        values.update(settled_values(transaction))
    # With its event (invoice.paid, invoice.past_due) when the phase changes.
    moved = await advance_invoice(session, invoice.id, target, event.occurred_at, values)
    if not moved:
        return f"ignored: {invoice.name} is past {target.value} or has newer news"
    return f"applied: {invoice.name} {target.value}"


def transaction_mismatch(
    invoice: Invoice, profile: BillingProfile | None, transaction: ProviderTransaction
) -> str:
    """Why ``transaction`` cannot be ``invoice``'s charge ("" when it can): it must be the
    invoice's own transaction once one is recorded, billed to the customer the tenant's billing
    profile links, in the invoice's currency, for the invoice's net amount before tax."""
    if invoice.provider_transaction_id and transaction.id != invoice.provider_transaction_id:
        return "another transaction than the invoice's"
    if profile is None or transaction.customer_id != profile.customer_id:
        return "customer is not the tenant's"
    if transaction.currency.upper() != invoice.currency.upper():
        return f"currency {transaction.currency[:3]!r} is not {invoice.currency}"
    if transaction.subtotal is None:
        return "amount not reported"
    charged = transaction.subtotal - (transaction.discount or Decimal(0))
    if charged != invoice.net:
        return f"amount {charged} is not {invoice.net}"
    return ""


async def _apply_subscription_event(
    session: AsyncSession, provider: PaymentProvider, event: ProviderEvent
) -> str:
    data = event.payload.get("data")
    if not isinstance(data, dict):
        return "ignored: no data"
    subscription = provider.parse_subscription(data)
    if subscription.status not in (SUBSCRIPTION_PAST_DUE, SUBSCRIPTION_ACTIVE):
        return f"ignored: subscription status {subscription.status[:40]!r} changes no tenant"
    tenant = await BillingRepository.from_session(session).tenant_for_subscription(
        subscription.id, subscription.customer_id
    )
    if tenant is None:
        return "ignored: no tenant for this subscription"
    past_due = subscription.status == SUBSCRIPTION_PAST_DUE
    return await lifecycle.apply_payment_standing(session, tenant, past_due, event.occurred_at)


async def record_outcome(session: AsyncSession, event_id: int, outcome: str) -> None:
    await session.execute(
        update(ProviderEvent).where(ProviderEvent.id == event_id).values(outcome=outcome[:255])
    )
