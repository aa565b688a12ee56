from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, Enum, ForeignKey, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tenantplane.db.base import Base, Versioned
from tenantplane.db.clock import database_time
from tenantplane.keys import LEGACY
from tenantplane.reconcile.lease import Leased


class AlertingConfig(Versioned, Leased, Base):
    """A tenant's whole Alertmanager configuration wrapper; resource_version is its ETag.

    The row is created with the default configuration (version 1) on the first write, so
    a tenant that never wrote reads that same default under ETag "1".

    The row is also the outbox of the backend: a write stores the document and makes the
    row due; the ``alerting`` reconciler applies it to the backend after commit (no lock is
    held across the backend call) and records ``applied_version`` or ``apply_error``.
    """

    __tablename__ = "alerting_configs"

    tenant_id: Mapped[int] = mapped_column(
        ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    # {"global", "receivers", "route", "templates", "time_intervals"}; always valid.
    document: Mapped[dict[str, Any]] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(default=database_time)
    # The version the backend holds (None: never applied); the configuration must be taken
    # off the backend (a reset) rather than applied; the backend's last refusal or failure.
    applied_version: Mapped[int | None] = mapped_column(Integer, default=None)
    remove_pending: Mapped[bool] = mapped_column(Boolean, default=False)
    # pending (due), applied, rejected (refused by the backend; not retried until the
    # configuration changes), unavailable (retried with backoff).
    apply_status: Mapped[str] = mapped_column(String(16), default="pending")
    apply_error: Mapped[str] = mapped_column(Text, default="")
    apply_attempts: Mapped[int] = mapped_column(Integer, default=0)


class CredentialsAuth(enum.StrEnum):
    none = "none"
    basic = "basic"
    bearer = "bearer"


class AlertingCredentials(Base):
    """How to reach a tenant's configuration in a remote multi-tenant backend (Mimir).

    Set by operators (`tenantplane alerting set-credentials`), never through the API.
    The secret (basic-auth password or bearer token) is encrypted with a key derived from
    the service's secret key (alerting/secrets.py).
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
    # Which key made the ciphertext (tenantplane.keys): "legacy" or "hkdf-sha256:<key id>".
    key_derivation: Mapped[str] = mapped_column(String(40), server_default=LEGACY)
    updated_at: Mapped[datetime] = mapped_column(default=database_time)
