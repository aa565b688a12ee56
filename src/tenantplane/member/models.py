from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import Enum, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from tenantplane.db.base import Base, Versioned
from tenantplane.db.clock import database_time


class Role(enum.StrEnum):
    admin = "admin"
    readonly = "readonly"


RoleColumn = Enum(Role, native_enum=False, length=16, validate_strings=True)


class Member(Versioned, Base):
    __tablename__ = "members"
    __table_args__ = (UniqueConstraint("tenant_id", "email"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    # Stored normalised (lower case), so uniqueness is case-insensitive on every backend.
    email: Mapped[str] = mapped_column(String(320))
    role: Mapped[Role] = mapped_column(RoleColumn)
    created_at: Mapped[datetime] = mapped_column(default=database_time)
