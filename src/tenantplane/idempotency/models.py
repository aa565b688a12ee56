from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from tenantplane.db.base import Base
from tenantplane.db.clock import database_time


class IdempotencyRecord(Base):
    """The completed first response to one tenant's request made under one key."""

    __tablename__ = "idempotency_keys"

    tenant_id: Mapped[int] = mapped_column(
        ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    # SHA-256 of the method, the path and the canonical JSON body: what "the same request" means.
    fingerprint: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int]
    headers: Mapped[dict[str, str]] = mapped_column(JSON)
    # Encrypted: a replayed API-key creation carries the raw key, a portal session its URLs.
    body: Mapped[bytes] = mapped_column(LargeBinary)
    key_derivation: Mapped[str] = mapped_column(String(40))
    created_at: Mapped[datetime] = mapped_column(default=database_time)
    expires_at: Mapped[datetime] = mapped_column(index=True)
