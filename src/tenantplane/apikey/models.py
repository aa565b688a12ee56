from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from tenantplane.db.base import Base, Versioned
from tenantplane.db.clock import database_time
from tenantplane.keys import LEGACY
from tenantplane.member.models import Role, RoleColumn
from tenantplane.tenant.models import Tenant


class ApiKey(Versioned, Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    display_name: Mapped[str] = mapped_column(String(200))
    role: Mapped[Role] = mapped_column(RoleColumn)
    # HMAC-SHA256 of the raw key under a key derived from the server's secret key (which
    # derivation: tenantplane.keys); the raw key is never stored.
    key_hash: Mapped[bytes] = mapped_column(LargeBinary(32), unique=True)
    key_derivation: Mapped[str] = mapped_column(String(40), server_default=LEGACY)
    expires_at: Mapped[datetime | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=database_time)
    created_by: Mapped[str] = mapped_column(String(320))
    last_used_at: Mapped[datetime | None] = mapped_column(default=None)

    tenant: Mapped[Tenant] = relationship(lazy="raise")
