from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import Boolean, Enum, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from tenantplane.db.base import Base, Versioned, utcnow


class Plan(enum.StrEnum):
    starter = "starter"
    pro = "pro"
    business = "business"
    enterprise = "enterprise"


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
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
