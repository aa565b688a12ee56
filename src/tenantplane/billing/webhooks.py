"""Provider webhooks: verify, store once by event id, apply asynchronously.

The HTTP handler only verifies the signature and inserts the event (insert … on conflict do
nothing), then answers 200 at once; the billing-events reconciler applies it. Applying is
idempotent and never moves an invoice backwards, so duplicates and reordering are harmless.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.billing.charging import settled_values
from tenantplane.billing.models import InvoicePhase, ProviderEvent
from tenantplane.billing.repository import BillingRepository
from tenantplane.db.base import utcnow
from tenantplane.http.errors import ApiError, ValidationFailed
from tenantplane.providers.payment import BillingNotConfigured, PaymentProvider
from tenantplane.reconcile import wake_after_commit

EVENTS_RECONCILER = "billing-events"

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
    inserted = await BillingRepository.from_session(session).insert_event_once(
        {
            "provider": provider.name,
            "event_id": document["event_id"][:64],
            "event_type": document["event_type"][:64],
            "occurred_at": _occurred_at(document["occurred_at"]),
            "received_at": utcnow(),
            "payload": document,
            "outcome": "",
            "reconcile_at": utcnow(),
        }
    )
    if inserted:
        wake_after_commit(session, EVENTS_RECONCILER)
    return inserted


async def apply_event(
    session: AsyncSession, provider: PaymentProvider, event: ProviderEvent
) -> str:
    """Apply one stored event to its invoice; returns what happened (kept on the event)."""
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
    values: dict[str, Any] = {
        "provider_transaction_id": transaction.id or invoice.provider_transaction_id
    }
    if target is InvoicePhase.paid:
        values.update(settled_values(transaction))
    moved = await repository.advance_invoice(invoice.id, target, event.occurred_at, values)
    if not moved:
        return f"ignored: {invoice.name} is past {target.value} or has newer news"
    return f"applied: {invoice.name} {target.value}"


async def record_outcome(session: AsyncSession, event_id: int, outcome: str) -> None:
    await session.execute(
        update(ProviderEvent).where(ProviderEvent.id == event_id).values(outcome=outcome[:255])
    )
