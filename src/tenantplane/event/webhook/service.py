"""Webhook subscriptions: create, read, change, delete, rotate the secret, ping, redeliver.

Every write locks the tenant's chain head before the webhook row (repository.py: the lock
order of ``append``). A new webhook, or one enabled again, starts at the head: it is sent
the events that follow, never the stream's past.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession
from ulid import ULID

from tenantplane.db.base import epoch_microseconds, from_epoch_microseconds, rfc3339
from tenantplane.db.clock import clock_of
from tenantplane.event.webhook import secrets
from tenantplane.event.webhook.destination import check_url
from tenantplane.event.webhook.models import DeliveryState, Webhook, WebhookDelivery
from tenantplane.event.webhook.repository import WebhookRepository
from tenantplane.event.webhook.schemas import WebhookCreate, WebhookUpdate
from tenantplane.http.errors import Conflict, NotFound, ValidationFailed
from tenantplane.http.etag import check_if_match
from tenantplane.http.firewall import Firewall
from tenantplane.http.paging import WHOLE, Page, SortKey, split_page
from tenantplane.keys import KeyRing, decrypt_stored, encrypt_stored
from tenantplane.reconcile.hints import wake_after_commit

# Webhooks a tenant may have (409 WEBHOOK_LIMIT_REACHED beyond).
MAX_WEBHOOKS = 20
# How long the secret replaced by rotate-secret keeps signing beside the new one.
ROTATION_OVERLAP = timedelta(hours=24)
# The reconciler that sends deliveries (delivery.py).
DELIVERY = "webhook-delivery"
PING = "webhook.ping"

_ULID = "[0-9A-HJKMNP-TV-Z]{26}"
WEBHOOK_ID_PATTERN = f"^wh-{_ULID}$"
DELIVERY_ID_PATTERN = f"^whd-{_ULID}$"


def new_webhook_id(now: datetime) -> str:
    return f"wh-{ULID.from_datetime(now)}"


def new_delivery_id(now: datetime) -> str:
    return f"whd-{ULID.from_datetime(now)}"


def _checked(value: str, pattern: str, what: str, field: str) -> str:
    if re.match(pattern, value) is None:
        prefix = pattern[1:].partition("[")[0]
        raise ValidationFailed(
            f"invalid {what} id: expected {prefix}…", field=field, code="INVALID_ID"
        )
    return value


@dataclass(frozen=True)
class WithSecret:
    """A webhook and its new signing secret (shown once)."""

    webhook: Webhook
    secret: str


async def create(
    session: AsyncSession, tenant_id: int, body: WebhookCreate, *, keys: KeyRing, firewall: Firewall
) -> WithSecret:
    url = check_url(body.url, firewall)
    repository = WebhookRepository.from_session(session)
    head = await repository.lock_chain(tenant_id)
    if await repository.count(tenant_id) >= MAX_WEBHOOKS:
        raise Conflict(
            f"a tenant may have at most {MAX_WEBHOOKS} webhooks; delete one first",
            code="WEBHOOK_LIMIT_REACHED",
        )
    now = await clock_of(session).now()
    secret = secrets.new_secret()
    ciphertext, derivation = encrypt_stored(keys, secret)
    webhook = Webhook(
        id=new_webhook_id(now),
        tenant_id=tenant_id,
        url=url,
        events=body.events,
        description=body.description,
        enabled=body.enabled,
        secret=ciphertext,
        key_derivation=derivation,
        # Only what follows: the tenant's events up to now are not sent.
        cursor_seq=head,
        created_at=now,
        updated_at=now,
    )
    repository.add(webhook)
    await session.flush()
    return WithSecret(webhook, secret)


async def list_webhooks(
    session: AsyncSession, tenant_id: int, page: Page = WHOLE
) -> tuple[Sequence[Webhook], SortKey | None]:
    """A page of the tenant's webhooks, oldest first, and the last one's sort key when more
    remain (its creation in epoch microseconds, then its id)."""
    after = None
    if page.after is not None:
        created, webhook_id = page.after
        after = (from_epoch_microseconds(int(created)), str(webhook_id))
    limit = None if page.limit is None else page.limit + 1
    found = await WebhookRepository.from_session(session).page(tenant_id, after, limit)
    return split_page(
        found, page.limit, lambda hook: (epoch_microseconds(hook.created_at), hook.id)
    )


async def get(
    session: AsyncSession, tenant_id: int, webhook_id: str, *, for_update: bool = False
) -> Webhook:
    _checked(webhook_id, WEBHOOK_ID_PATTERN, "webhook", "id")
    webhook = await WebhookRepository.from_session(session).get(
        tenant_id, webhook_id, for_update=for_update
    )
    if webhook is None:
        raise NotFound("webhook")
    return webhook


async def _locked(
    session: AsyncSession, tenant_id: int, webhook_id: str, if_match: str | None
) -> tuple[Webhook, int]:
    """The webhook locked for a change (the chain head first), and the head."""
    _checked(webhook_id, WEBHOOK_ID_PATTERN, "webhook", "id")
    head = await WebhookRepository.from_session(session).lock_chain(tenant_id)
    webhook = await get(session, tenant_id, webhook_id, for_update=True)
    check_if_match(if_match, webhook.resource_version)
    return webhook, head


async def update(
    session: AsyncSession,
    tenant_id: int,
    webhook_id: str,
    body: WebhookUpdate,
    if_match: str | None,
    *,
    firewall: Firewall,
) -> Webhook:
    changes = body.model_dump(exclude_unset=True)
    if not changes:
        raise ValidationFailed(
            "nothing to change: give url, events, description or enabled",
            field=None,
            code="NO_UPDATABLE_FIELDS",
        )
    if body.url is not None:
        check_url(body.url, firewall)
    webhook, head = await _locked(session, tenant_id, webhook_id, if_match)
    changed = {key: value for key, value in changes.items() if getattr(webhook, key) != value}
    if not changed:
        return webhook
    if changed.get("enabled") is True or "url" in changed:
        # A new start: the run of failures (and the platform's reason) ends.
        webhook.failing_since = None
        webhook.disabled_reason = None
    if changed.get("enabled") is True:
        # Enabled again: from the events that follow, not those missed while disabled.
        webhook.cursor_seq = head
    for key, value in changed.items():
        setattr(webhook, key, value)
    now = await clock_of(session).now()
    webhook.updated_at = now
    await session.flush()
    if changed.get("enabled") is False:
        await _stop_pending(session, webhook.id, now)
    return webhook


async def _stop_pending(session: AsyncSession, webhook_id: str, now: datetime) -> None:
    """A disabled webhook's pending deliveries are due now: the delivery reconciler cancels
    them (sending nothing) instead of keeping them until their next attempt."""
    if await WebhookRepository.from_session(session).pending_due(webhook_id, now):
        wake_after_commit(session, DELIVERY)


async def delete(
    session: AsyncSession, tenant_id: int, webhook_id: str, if_match: str | None
) -> None:
    webhook, _ = await _locked(session, tenant_id, webhook_id, if_match)
    await WebhookRepository.from_session(session).delete(webhook)
    await session.flush()


async def rotate_secret(
    session: AsyncSession, tenant_id: int, webhook_id: str, if_match: str | None, *, keys: KeyRing
) -> WithSecret:
    """A new secret; the current one keeps signing beside it for ``ROTATION_OVERLAP`` (a
    secret replaced earlier stops at once)."""
    webhook, _ = await _locked(session, tenant_id, webhook_id, if_match)
    now = await clock_of(session).now()
    current = decrypt_stored(keys, webhook.secret, webhook.key_derivation)
    secret = secrets.new_secret()
    webhook.previous_secret, _ = encrypt_stored(keys, current)
    webhook.secret, webhook.key_derivation = encrypt_stored(keys, secret)
    webhook.previous_secret_expires_at = now + ROTATION_OVERLAP
    webhook.updated_at = now
    await session.flush()
    return WithSecret(webhook, secret)


async def reencrypt_secrets(session: AsyncSession, keys: KeyRing) -> int:
    """Encrypt every webhook's secrets under the current secret key (after a rotation of the
    secret key); how many webhooks changed. Fails, changing nothing, if one cannot be
    decrypted."""
    current = keys.current.derivation
    webhooks = await WebhookRepository.from_session(session).not_derived_with(current)
    for webhook in webhooks:
        derivation = webhook.key_derivation
        webhook.secret, _ = encrypt_stored(keys, decrypt_stored(keys, webhook.secret, derivation))
        if webhook.previous_secret is not None:
            previous = decrypt_stored(keys, webhook.previous_secret, derivation)
            webhook.previous_secret, _ = encrypt_stored(keys, previous)
        webhook.key_derivation = current
    await session.flush()
    return len(webhooks)


async def list_deliveries(
    session: AsyncSession, tenant_id: int, webhook_id: str, page: Page = WHOLE
) -> tuple[Sequence[WebhookDelivery], SortKey | None]:
    """A page of the webhook's deliveries, newest first."""
    await get(session, tenant_id, webhook_id)
    before = None
    if page.after is not None:
        created, delivery_id = page.after
        before = (from_epoch_microseconds(int(created)), str(delivery_id))
    limit = None if page.limit is None else page.limit + 1
    found = await WebhookRepository.from_session(session).deliveries_page(
        tenant_id, webhook_id, before, limit
    )
    return split_page(found, page.limit, lambda row: (epoch_microseconds(row.created_at), row.id))


async def get_delivery(
    session: AsyncSession, tenant_id: int, webhook_id: str, delivery_id: str
) -> WebhookDelivery:
    _checked(webhook_id, WEBHOOK_ID_PATTERN, "webhook", "id")
    _checked(delivery_id, DELIVERY_ID_PATTERN, "delivery", "delivery")
    delivery = await WebhookRepository.from_session(session).delivery(
        tenant_id, webhook_id, delivery_id
    )
    if delivery is None:
        raise NotFound("delivery")
    return delivery


async def _enabled(session: AsyncSession, tenant_id: int, webhook_id: str) -> Webhook:
    """The webhook a delivery is added to (the chain head locked first: the row's key is
    share-locked by the insert, and a delete takes the head before the row)."""
    _checked(webhook_id, WEBHOOK_ID_PATTERN, "webhook", "id")
    await WebhookRepository.from_session(session).lock_chain(tenant_id)
    webhook = await get(session, tenant_id, webhook_id)
    if not webhook.enabled:
        raise Conflict(
            "the webhook is disabled: nothing is sent to it until it is enabled again",
            code="WEBHOOK_DISABLED",
        )
    return webhook


def _due(
    session: AsyncSession,
    webhook: Webhook,
    now: datetime,
    message_id: str,
    event_type: str,
    payload: str,
    event_seq: int | None = None,
) -> WebhookDelivery:
    delivery = WebhookDelivery(
        id=new_delivery_id(now),
        webhook_id=webhook.id,
        tenant_id=webhook.tenant_id,
        message_id=message_id,
        event_seq=event_seq,
        event_type=event_type,
        payload=payload,
        state=DeliveryState.pending.value,
        attempts=0,
        history=[],
        created_at=now,
        reconcile_at=now,
    )
    WebhookRepository.from_session(session).add(delivery)
    wake_after_commit(session, DELIVERY)
    return delivery


async def ping(session: AsyncSession, tenant_id: int, webhook_id: str) -> WebhookDelivery:
    """A signed ``webhook.ping`` message of its own id, sent as every delivery is."""
    webhook = await _enabled(session, tenant_id, webhook_id)
    now = await clock_of(session).now()
    message_id = f"msg-{ULID.from_datetime(now)}"
    payload = json.dumps(
        {"type": PING, "timestamp": rfc3339(now), "data": {"webhookId": webhook.id}},
        separators=(",", ":"),
    )
    delivery = _due(session, webhook, now, message_id, PING, payload)
    await session.flush()
    return delivery


async def redeliver(
    session: AsyncSession, tenant_id: int, webhook_id: str, delivery_id: str
) -> WebhookDelivery:
    """A new delivery of the same message (the same ``webhook-id`` and body), tried at once
    and on the retry schedule; the original keeps its history."""
    original = await get_delivery(session, tenant_id, webhook_id, delivery_id)
    webhook = await _enabled(session, tenant_id, webhook_id)
    now = await clock_of(session).now()
    delivery = _due(
        session,
        webhook,
        now,
        original.message_id,
        original.event_type,
        original.payload,
        original.event_seq,
    )
    await session.flush()
    return delivery
