from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import Boolean, Enum, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from tenantplane.db.base import Base, Versioned
from tenantplane.db.clock import database_time


class Plan(enum.StrEnum):
    starter = "starter"
    pro = "pro"
    business = "business"
    enterprise = "enterprise"


class TenantState(enum.StrEnum):
    """What a tenant may do (docs/security.md, "Tenant lifecycle")."""

    active = "active"
    suspended = "suspended"  # read-only until resumed
    cancelled = "cancelled"  # read-only for good; its resources are withdrawn


class SuspendedBy(enum.StrEnum):
    """Who suspended a tenant: only the same cause lifts a suspension on its own."""

    operator = "operator"
    payment = "payment"  # the payment provider reported the subscription past due


class Tenant(Versioned, Base):
    __tablename__ = "tenants"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(63), unique=True)
    plan: Mapped[Plan] = mapped_column(
        Enum(Plan, native_enum=False, length=20, validate_strings=True), default=Plan.starter
    )
    enforce_metrics_limit: Mapped[bool] = mapped_column(Boolean, default=False)
    enforce_log_limit: Mapped[bool] = mapped_column(Boolean, default=False)
    # Collection version of the member list (If-Match on POST members).
    members_version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(default=database_time)
    state: Mapped[TenantState] = mapped_column(
        Enum(TenantState, native_enum=False, length=16, validate_strings=True),
        default=TenantState.active,
        server_default=TenantState.active.value,
    )
    # Set while suspended: an operator's suspension is lifted by an operator only.
    suspended_by: Mapped[SuspendedBy | None] = mapped_column(
        Enum(SuspendedBy, native_enum=False, length=16, validate_strings=True), default=None
    )
    # When the current state began (the cancellation time of a cancelled tenant).
    state_changed_at: Mapped[datetime | None] = mapped_column(default=None)
    # occurred_at of the newest subscription event applied: older news changes nothing.
    payment_event_at: Mapped[datetime | None] = mapped_column(default=None)
