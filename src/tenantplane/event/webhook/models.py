"""Webhook subscriptions and their deliveries (docs/webhooks.md)."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from tenantplane.db.base import Base, Versioned
from tenantplane.db.clock import database_time
from tenantplane.reconcile.lease import Leased


class Webhook(Versioned, Leased, Base):
    """A subscription. Its reconciler (the dispatcher) turns the tenant's events after
    ``cursor_seq`` that match ``events`` into deliveries: the event stream is the outbox."""

    __tablename__ = "webhooks"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    url: Mapped[str] = mapped_column(Text)
    events: Mapped[list[str]] = mapped_column(JSON)
    description: Mapped[str] = mapped_column(String(500), default="")
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    # The signing secrets, encrypted (keys.py, stored credentials); the previous one signs
    # beside the current until ``previous_secret_expires_at`` (a rotation's overlap).
    secret: Mapped[bytes] = mapped_column(LargeBinary)
    previous_secret: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    previous_secret_expires_at: Mapped[datetime | None] = mapped_column(default=None)
    key_derivation: Mapped[str] = mapped_column(String(40))
    # The last event position of the tenant's stream already turned into deliveries.
    cursor_seq: Mapped[int] = mapped_column(BigInteger, default=0)
    # The first failed attempt of the current run of failures (None once one succeeds).
    failing_since: Mapped[datetime | None] = mapped_column(default=None)
    disabled_reason: Mapped[str | None] = mapped_column(String(200), default=None)
    created_at: Mapped[datetime] = mapped_column(default=database_time)
    updated_at: Mapped[datetime] = mapped_column(default=database_time)


class DeliveryState(enum.StrEnum):
    pending = "pending"  # an attempt is due: the first, or a retry (``reconcile_at``)
    succeeded = "succeeded"  # answered 2xx
    failed = "failed"  # the retry schedule ended without a 2xx
    cancelled = "cancelled"  # its webhook was disabled before it succeeded


class WebhookDelivery(Leased, Base):
    """One message to one endpoint, tried until it is answered 2xx or the schedule ends.
    ``reconcile_at`` is its next attempt."""

    __tablename__ = "webhook_deliveries"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    webhook_id: Mapped[str] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    tenant_id: Mapped[int] = mapped_column(Integer)
    # ``webhook-id``: the event's id (a ping's own); the same on every attempt and redelivery.
    message_id: Mapped[str] = mapped_column(String(40))
    event_seq: Mapped[int | None] = mapped_column(BigInteger, default=None)
    event_type: Mapped[str] = mapped_column(String(80))
    # The body sent, fixed when the delivery is made: every attempt signs the same bytes.
    payload: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_status_code: Mapped[int | None] = mapped_column(Integer, default=None)
    last_latency_ms: Mapped[int | None] = mapped_column(Integer, default=None)
    last_error: Mapped[str | None] = mapped_column(String(500), default=None)
    last_attempt_at: Mapped[datetime | None] = mapped_column(default=None)
    # Every attempt: {at, statusCode, latencyMs, error}.
    history: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(default=database_time)

    __table_args__ = (
        # A webhook's deliveries newest first (the list's order), and its cascade on delete.
        Index("ix_webhook_deliveries_webhook_created", "webhook_id", "created_at", "id"),
    )
