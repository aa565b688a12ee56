"""Billing rows: invoices with line items, billing profiles (tenant ↔ Paddle), promotional
credit, provider webhook events and the schedule row of the billing-cycle reconciler.

Money is stored as exact decimal strings (``DecimalString``): SQLite has no decimal type and
would round through floats; one representation on every backend keeps amounts exact.
"""

from __future__ import annotations

import enum
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    JSON,
    ForeignKey,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Mapped, mapped_column, relationship

from tenantplane.db.base import Base, Versioned
from tenantplane.db.clock import database_time
from tenantplane.reconcile.lease import Leased


class DecimalString(TypeDecorator[Decimal]):
    """An exact Decimal kept as its canonical string."""

    impl = String(40)
    cache_ok = True

    def process_bind_param(self, value: Decimal | None, dialect: Dialect) -> str | None:
        return None if value is None else str(Decimal(value))

    def process_result_value(self, value: str | None, dialect: Dialect) -> Decimal | None:
        return None if value is None else Decimal(value)


class InvoicePhase(enum.StrEnum):
    draft = "Draft"
    billed = "Billed"
    past_due = "PastDue"
    paid = "Paid"

    @property
    def rank(self) -> int:
        """Invoices only ever move to a higher rank (out-of-order events change nothing)."""
        return _PHASE_RANK[self]


_PHASE_RANK = {
    InvoicePhase.draft: 0,
    InvoicePhase.billed: 1,
    InvoicePhase.past_due: 2,
    InvoicePhase.paid: 3,
}


class InvoiceKind(enum.StrEnum):
    regular = "regular"
    final = "final"


class Invoice(Versioned, Leased, Base):
    """One closed billing period of a tenant. The invoices reconciler charges Draft ones."""

    __tablename__ = "invoices"
    # One invoice per tenant and period, guaranteed by the database: two overlapping billing
    # runs (or a run and the cycle reconciler) both try to insert, and one insert wins.
    # Periods of a tenant never share a start (each starts where the previous one ended).
    __table_args__ = (
        UniqueConstraint("tenant_id", "name"),
        UniqueConstraint("tenant_id", "period_start"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # Our identity of the invoice at the provider (custom_data), never reused.
    uid: Mapped[str] = mapped_column(String(32), unique=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(96))
    kind: Mapped[str] = mapped_column(String(16), default=InvoiceKind.regular.value)
    plan: Mapped[str] = mapped_column(String(20))
    period_start: Mapped[datetime]
    period_end: Mapped[datetime]
    created_at: Mapped[datetime] = mapped_column(default=database_time)

    phase: Mapped[str] = mapped_column(String(16), default=InvoicePhase.draft.value)
    currency: Mapped[str] = mapped_column(String(3))
    subtotal: Mapped[Decimal] = mapped_column(DecimalString())
    credits_applied: Mapped[Decimal] = mapped_column(DecimalString())
    tax: Mapped[Decimal] = mapped_column(DecimalString())
    total: Mapped[Decimal] = mapped_column(DecimalString())
    conditions: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)

    provider_transaction_id: Mapped[str] = mapped_column(String(64), default="", index=True)
    provider_invoice_number: Mapped[str] = mapped_column(String(64), default="")
    # occurred_at of the newest provider event applied (events older than it change nothing).
    provider_event_at: Mapped[datetime | None] = mapped_column(default=None)
    charge_attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_charge_error: Mapped[str] = mapped_column(Text, default="")

    line_items: Mapped[list[InvoiceLineItem]] = relationship(
        back_populates="invoice",
        order_by="InvoiceLineItem.position",
        cascade="all, delete-orphan",
        lazy="selectin",
    )

    @property
    def net(self) -> Decimal:
        """What is charged through the provider: subtotal minus promotional credit."""
        return self.subtotal - self.credits_applied


class ChargeAttemptOutcome(enum.StrEnum):
    pending = "pending"  # recorded before the provider was called; no answer recorded yet
    interrupted = "interrupted"  # its worker died or lost its lease before recording one
    charged = "charged"  # the provider created the transaction
    adopted = "adopted"  # an earlier attempt's transaction was found and taken as the charge
    failed = "failed"  # the provider failed or was unreachable (``error``)


class ChargeAttempt(Base):
    """One attempt to charge an invoice, recorded under the invoice's lease *before* the
    provider is called: a successor then knows a call may have been made, and looks for
    its transaction before creating one (docs/billing.md)."""

    __tablename__ = "invoice_charge_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    invoice_id: Mapped[int] = mapped_column(
        ForeignKey("invoices.id", ondelete="CASCADE"), index=True
    )
    # The lease's fencing token: which worker's attempt it was.
    lease_token: Mapped[str] = mapped_column(String(32))
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None] = mapped_column(default=None)
    outcome: Mapped[str] = mapped_column(String(16), default=ChargeAttemptOutcome.pending.value)
    transaction_id: Mapped[str] = mapped_column(String(64), default="")
    error: Mapped[str] = mapped_column(Text, default="")


class InvoiceLineItem(Base):
    __tablename__ = "invoice_line_items"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    invoice_id: Mapped[int] = mapped_column(
        ForeignKey("invoices.id", ondelete="CASCADE"), index=True
    )
    position: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(32))
    description: Mapped[str] = mapped_column(String(255))
    cluster: Mapped[str] = mapped_column(String(63), default="")
    quantity: Mapped[Decimal] = mapped_column(DecimalString())
    unit: Mapped[str] = mapped_column(String(32))
    unit_price: Mapped[Decimal] = mapped_column(DecimalString())
    amount: Mapped[Decimal] = mapped_column(DecimalString())

    invoice: Mapped[Invoice] = relationship(back_populates="line_items")


class BillingProfile(Base):
    """A tenant's customer (and optionally subscription and address) at Paddle."""

    __tablename__ = "billing_profiles"

    tenant_id: Mapped[int] = mapped_column(
        ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    customer_id: Mapped[str] = mapped_column(String(64))
    subscription_id: Mapped[str | None] = mapped_column(String(64), default=None)
    address_id: Mapped[str | None] = mapped_column(String(64), default=None)
    created_at: Mapped[datetime] = mapped_column(default=database_time)
    updated_at: Mapped[datetime] = mapped_column(default=database_time)


class CreditEntry(Base):
    """Promotional credit ledger (insert-only): grants are positive, uses negative."""

    __tablename__ = "billing_credits"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    amount: Mapped[Decimal] = mapped_column(DecimalString())
    invoice_id: Mapped[int | None] = mapped_column(
        ForeignKey("invoices.id", ondelete="SET NULL"), default=None
    )
    note: Mapped[str] = mapped_column(String(255), default="")
    created_at: Mapped[datetime] = mapped_column(default=database_time)


class ProviderEvent(Leased, Base):
    """A verified provider webhook, stored once by its event id and applied asynchronously."""

    __tablename__ = "billing_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    provider: Mapped[str] = mapped_column(String(16))
    event_id: Mapped[str] = mapped_column(String(64), unique=True)
    event_type: Mapped[str] = mapped_column(String(64))
    occurred_at: Mapped[datetime]
    received_at: Mapped[datetime] = mapped_column(default=database_time)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    processed_at: Mapped[datetime | None] = mapped_column(default=None)
    outcome: Mapped[str] = mapped_column(String(255), default="")


class BillingSchedule(Leased, Base):
    """The single row the billing-cycle reconciler leases: due when a period ends."""

    __tablename__ = "billing_schedule"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    last_run_at: Mapped[datetime | None] = mapped_column(default=None)
