"""Webhooks and their deliveries in the database: what the API reads and writes (scoped to
a tenant in ``_webhooks`` and ``_deliveries``), and what the dispatcher and the delivery
reconciler read and write under their leases.

Lock order (PostgreSQL): a tenant's chain head (``event_chains``) before any of its webhook
rows, as ``append`` takes them (event/log.py: the head, then ``UPDATE webhooks``). Every write
here that changes a webhook row in a transaction that may append an event (every API write
does: its audit event) locks the head first (``lock_chain``); the dispatcher takes it shared
(``head_shared``). A transaction holding a webhook row and waiting for the head, beside an
append holding the head and waiting for the row, would deadlock.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Row, Select, Table, case, func, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.db.rows import insert_rows
from tenantplane.event.models import Event, EventChain
from tenantplane.event.webhook.models import DeliveryState, Webhook, WebhookDelivery

# tenant_id, cursor_seq, events, enabled
DispatchState = Row[int, int, list[str], bool]
# seq, id, action, body, hash
EventRow = Row[int, str, str, str, str]
# The delivery's webhook_id, tenant_id, message_id, payload, state, attempts, history,
# created_at; its webhook's url, enabled, secret, previous_secret, previous_secret_expires_at,
# key_derivation.
AttemptRow = Row[
    str,
    int,
    str,
    str,
    str,
    int,
    list[dict[str, Any]],
    datetime,
    str,
    bool,
    bytes,
    bytes | None,
    datetime | None,
    str,
]


class WebhookRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    @classmethod
    def from_session(cls, session: AsyncSession) -> WebhookRepository:
        return cls(session)

    # The tenant's scope: every read of the API goes through one of these two.
    @staticmethod
    def _webhooks(tenant_id: int) -> Select[Webhook]:
        return select(Webhook).where(Webhook.tenant_id == tenant_id)

    @staticmethod
    def _deliveries(tenant_id: int, webhook_id: str) -> Select[WebhookDelivery]:
        return select(WebhookDelivery).where(
            WebhookDelivery.tenant_id == tenant_id, WebhookDelivery.webhook_id == webhook_id
        )

    async def _head(self, tenant_id: int, *, read: bool) -> int:
        statement = select(EventChain.seq).where(EventChain.tenant_id == tenant_id)
        if self.session.get_bind().dialect.name == "postgresql":
            statement = statement.with_for_update(read=read)
        return int((await self.session.execute(statement)).scalar() or 0)

    async def lock_chain(self, tenant_id: int) -> int:
        """The tenant's chain head (its newest event's position; 0 before the first), locked
        until the transaction ends as ``append`` locks it: before any webhook row."""
        return await self._head(tenant_id, read=False)

    async def head_shared(self, tenant_id: int) -> int:
        """The tenant's chain head, share-locked until the transaction ends: an append in
        flight commits first (its events are then visible), and one that begins waits for
        this transaction's end."""
        return await self._head(tenant_id, read=True)

    async def count(self, tenant_id: int) -> int:
        statement = select(func.count()).where(Webhook.tenant_id == tenant_id)
        return int((await self.session.execute(statement)).scalar_one())

    async def page(
        self, tenant_id: int, after: tuple[datetime, str] | None, limit: int | None
    ) -> Sequence[Webhook]:
        """The webhooks created after ``after`` (created_at, id), oldest first."""
        statement = self._webhooks(tenant_id).order_by(Webhook.created_at, Webhook.id).limit(limit)
        if after is not None:
            statement = statement.where(tuple_(Webhook.created_at, Webhook.id) > tuple_(*after))
        return (await self.session.execute(statement)).scalars().all()

    async def get(
        self, tenant_id: int, webhook_id: str, *, for_update: bool = False
    ) -> Webhook | None:
        statement = self._webhooks(tenant_id).where(Webhook.id == webhook_id)
        if for_update:
            statement = statement.with_for_update()
        return (await self.session.execute(statement)).scalar_one_or_none()

    async def not_derived_with(self, derivation: str) -> Sequence[Webhook]:
        """Every tenant's webhooks whose secrets another key than ``derivation`` encrypted,
        locked (``keys rotate``)."""
        statement = select(Webhook).where(Webhook.key_derivation != derivation).with_for_update()
        return (await self.session.execute(statement)).scalars().all()

    def add(self, row: Webhook | WebhookDelivery) -> None:
        self.session.add(row)

    async def delete(self, webhook: Webhook) -> None:
        """The webhook and, by cascade, its deliveries (an attempt in flight is discarded)."""
        await self.session.delete(webhook)

    async def deliveries_page(
        self,
        tenant_id: int,
        webhook_id: str,
        before: tuple[datetime, str] | None,
        limit: int | None,
    ) -> Sequence[WebhookDelivery]:
        """The webhook's deliveries made before ``before`` (created_at, id), newest first."""
        statement = (
            self._deliveries(tenant_id, webhook_id)
            .order_by(WebhookDelivery.created_at.desc(), WebhookDelivery.id.desc())
            .limit(limit)
        )
        if before is not None:
            key = tuple_(WebhookDelivery.created_at, WebhookDelivery.id)
            statement = statement.where(key < tuple_(*before))
        return (await self.session.execute(statement)).scalars().all()

    async def delivery(
        self, tenant_id: int, webhook_id: str, delivery_id: str
    ) -> WebhookDelivery | None:
        statement = self._deliveries(tenant_id, webhook_id).where(WebhookDelivery.id == delivery_id)
        return (await self.session.execute(statement)).scalar_one_or_none()

    # What the reconcilers read and write, each under its own lease (the framework's guard
    # ends it; these are the other rows and columns of the same step).

    async def dispatch_state(self, webhook_id: str) -> DispatchState | None:
        """What the dispatcher needs of a webhook: tenant, cursor, patterns, enabled."""
        statement = select(
            Webhook.tenant_id, Webhook.cursor_seq, Webhook.events, Webhook.enabled
        ).where(Webhook.id == webhook_id)
        return (await self.session.execute(statement)).one_or_none()

    async def events_after(
        self, tenant_id: int, after: int, through: int, limit: int
    ) -> Sequence[EventRow]:
        """The tenant's events at positions ``after`` < seq <= ``through``, in order."""
        statement = (
            select(Event.seq, Event.id, Event.action, Event.body, Event.hash)
            .where(Event.tenant_id == tenant_id, Event.seq > after, Event.seq <= through)
            .order_by(Event.seq)
            .limit(limit)
        )
        return (await self.session.execute(statement)).all()

    async def insert_deliveries(self, rows: Sequence[dict[str, Any]]) -> None:
        """A dispatch's deliveries in one statement of constant text (db/rows.py)."""
        await insert_rows(self.session, cast(Table, WebhookDelivery.__table__), rows)

    async def attempt_of(self, delivery_id: str) -> AttemptRow | None:
        """A delivery with what its attempt needs of its webhook."""
        statement = (
            select(
                WebhookDelivery.webhook_id,
                WebhookDelivery.tenant_id,
                WebhookDelivery.message_id,
                WebhookDelivery.payload,
                WebhookDelivery.state,
                WebhookDelivery.attempts,
                WebhookDelivery.history,
                WebhookDelivery.created_at,
                Webhook.url,
                Webhook.enabled,
                Webhook.secret,
                Webhook.previous_secret,
                Webhook.previous_secret_expires_at,
                Webhook.key_derivation,
            )
            .join(Webhook, Webhook.id == WebhookDelivery.webhook_id)
            .where(WebhookDelivery.id == delivery_id)
        )
        return (await self.session.execute(statement)).one_or_none()

    async def mark_failing(self, webhook_id: str, now: datetime) -> datetime | None:
        """Note a failed attempt: ``failing_since`` is set unless a run of failures began
        earlier (a change clients see: the version moves). Its value, None if the webhook
        is gone or disabled."""
        statement = (
            update(Webhook)
            .where(Webhook.id == webhook_id, Webhook.enabled.is_(True))
            .values(
                failing_since=func.coalesce(Webhook.failing_since, now),
                resource_version=case(
                    (Webhook.failing_since.is_(None), Webhook.resource_version + 1),
                    else_=Webhook.resource_version,
                ),
            )
            .returning(Webhook.failing_since)
            .execution_options(synchronize_session=False)
        )
        found: datetime | None = (await self.session.execute(statement)).scalar()
        return found

    async def clear_failing(self, webhook_id: str) -> None:
        """A successful attempt ends the webhook's run of failures."""
        statement = (
            update(Webhook)
            .where(Webhook.id == webhook_id, Webhook.failing_since.is_not(None))
            .values(failing_since=None, resource_version=Webhook.resource_version + 1)
            .execution_options(synchronize_session=False)
        )
        await self.session.execute(statement)

    async def pending_due(self, webhook_id: str, now: datetime) -> int:
        """Make the webhook's pending deliveries due at ``now`` (a disabled webhook's are then
        cancelled at once, not at their next attempt); how many."""
        statement = (
            update(WebhookDelivery)
            .where(
                WebhookDelivery.webhook_id == webhook_id,
                WebhookDelivery.state == DeliveryState.pending.value,
            )
            .values(reconcile_at=now)
            .execution_options(synchronize_session=False)
        )
        result = await self.session.execute(statement)
        return int(result.rowcount or 0)  # type: ignore[attr-defined]

    async def disable(self, webhook_id: str, reason: str, now: datetime) -> bool:
        """Disable an enabled webhook; False if it is gone or was already disabled."""
        statement = (
            update(Webhook)
            .where(Webhook.id == webhook_id, Webhook.enabled.is_(True))
            .values(
                enabled=False,
                disabled_reason=reason,
                reconcile_at=None,
                updated_at=now,
                resource_version=Webhook.resource_version + 1,
            )
            .execution_options(synchronize_session=False)
        )
        result = await self.session.execute(statement)
        return bool(result.rowcount)  # type: ignore[attr-defined]
