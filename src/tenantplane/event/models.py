"""The tenant's event stream: one append-only, hash-chained row per event (docs/events.md)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tenantplane.db.base import Base
from tenantplane.reconcile.lease import Leased

# The hash before a tenant's first event: 32 zero bytes.
GENESIS = "0" * 64


class Event(Base):
    """One event as it was hashed: ``body`` is its canonical JSON (event/chain.py); the other
    columns repeat what the filters need, and ``event verify`` checks that they agree."""

    __tablename__ = "events"

    tenant_id: Mapped[int] = mapped_column(
        ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    # The event's place in its tenant's chain: 1, 2, … without gaps (the chain's head row is
    # locked from the append to the commit, so positions commit in order).
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    id: Mapped[str] = mapped_column(String(26), unique=True)
    time: Mapped[datetime]
    type: Mapped[str] = mapped_column(String(16))
    action: Mapped[str] = mapped_column(String(80))
    resource_kind: Mapped[str] = mapped_column(String(40))
    resource_name: Mapped[str] = mapped_column(String(320))
    actor_kind: Mapped[str] = mapped_column(String(16))
    # The member's email or the key's id ("" for the operator and the system).
    actor_id: Mapped[str] = mapped_column(String(320))
    body: Mapped[str] = mapped_column(Text)
    # SHA-256 (hex) over the previous event's hash (raw bytes) and ``body`` (UTF-8).
    hash: Mapped[str] = mapped_column(String(64))

    __table_args__ = (
        Index("ix_events_tenant_action", "tenant_id", "action", "seq"),
        Index("ix_events_tenant_resource", "tenant_id", "resource_kind", "resource_name", "seq"),
        Index("ix_events_tenant_actor", "tenant_id", "actor_id", "seq"),
        Index("ix_events_tenant_type", "tenant_id", "type", "seq"),
        Index("ix_events_tenant_time", "tenant_id", "time"),
    )


class EventChain(Leased, Base):
    """The head of a tenant's chain, and where its retained part begins. ``reconcile_at``:
    when retention next looks at the tenant's events (event/retention.py)."""

    __tablename__ = "event_chains"

    tenant_id: Mapped[int] = mapped_column(
        ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    # The newest event's position and hash (0 and GENESIS before the first).
    seq: Mapped[int] = mapped_column(BigInteger, default=0)
    hash: Mapped[str] = mapped_column(String(64), default=GENESIS)
    # Events up to this position were purged (retention); the first kept one chains from
    # ``purged_hash``, the hash of the last purged event.
    purged_seq: Mapped[int] = mapped_column(BigInteger, default=0)
    purged_hash: Mapped[str] = mapped_column(String(64), default=GENESIS)
