from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Enum, ForeignKey, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from tenantplane.db.base import Base, Versioned, utcnow


class AlertingConfig(Versioned, Base):
    """A tenant's whole Alertmanager configuration wrapper; resource_version is its ETag.

    The row is created with the default configuration (version 1) on the first write, so
    a tenant that never wrote reads that same default under ETag "1".
    """

    __tablename__ = "alerting_configs"

    tenant_id: Mapped[int] = mapped_column(
        ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    # {"global", "receivers", "route", "templates", "time_intervals"}; always valid.
    document: Mapped[dict[str, Any]] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class CredentialsAuth(enum.StrEnum):
    none = "none"
    basic = "basic"
    bearer = "bearer"


class AlertingCredentials(Base):
    """How to reach a tenant's configuration in a remote multi-tenant backend (Mimir).

    Set by operators (`tenantplane alerting set-credentials`), never through the API.
    The secret (basic-auth password or bearer token) is encrypted with a key derived from
    the service's secret key.
    """

    __tablename__ = "alerting_credentials"

    tenant_id: Mapped[int] = mapped_column(
        ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    org_id: Mapped[str] = mapped_column(String(150))
    auth: Mapped[CredentialsAuth] = mapped_column(
        Enum(CredentialsAuth, native_enum=False, length=16, validate_strings=True)
    )
    username: Mapped[str | None] = mapped_column(String(200), default=None)
    secret_ciphertext: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
