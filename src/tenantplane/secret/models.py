"""Managed secrets: desired state (path and sync targets) and observed sync status.

A secret never holds a value: ``secret_path`` points into the tenant's vault, and the sync
provider makes the orchestrator fetch the value itself (docs/secrets.md).
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from tenantplane.db.base import Base, Versioned
from tenantplane.db.clock import database_time
from tenantplane.reconcile.lease import Leased


class SyncPhase(enum.StrEnum):
    pending = "Pending"
    synced = "Synced"
    failed = "Failed"


class Secret(Versioned, Leased, Base):
    __tablename__ = "secrets"
    __table_args__ = (
        # A name is taken only by a live secret: one being deleted (its copies still being
        # removed) no longer blocks a new secret of the same name.
        Index(
            "uq_secrets_tenant_id_name_live",
            "tenant_id",
            "name",
            unique=True,
            sqlite_where="deletion_requested_at IS NULL",
            postgresql_where="deletion_requested_at IS NULL",
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # Identifies this incarnation as the owner of its copies in clusters (a name may be reused).
    uid: Mapped[str] = mapped_column(String(32), unique=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(63))
    created_at: Mapped[datetime] = mapped_column(default=database_time)

    # Desired state, written by the API.
    secret_path: Mapped[str] = mapped_column(String(255))
    # [{"cluster", "namespace", "secretName"}], secretName resolved to its default.
    sync: Mapped[list[dict[str, str]]] = mapped_column(JSON, default=list)
    # Bumped by every change of desired state (sync targets, deletion).
    generation: Mapped[int] = mapped_column(Integer, default=1)
    deletion_requested_at: Mapped[datetime | None] = mapped_column(default=None)

    # Observed state, written by the reconciler (and reset for new targets by the API).
    phase: Mapped[str] = mapped_column(String(16), default=SyncPhase.pending.value)
    observed_generation: Mapped[int] = mapped_column(Integer, default=0)
    # One entry per target, in the order of ``sync`` (docs/secrets.md).
    sync_statuses: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    conditions: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    # Copies the reconciler has placed and not yet removed:
    # [{"clusterUid", "cluster", "namespace", "secretName"}]. What removal works from.
    applied: Mapped[list[dict[str, str]]] = mapped_column(JSON, default=list)

    @property
    def is_deleting(self) -> bool:
        return self.deletion_requested_at is not None
