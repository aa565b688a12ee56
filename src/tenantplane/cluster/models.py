"""Clusters (desired spec + observed status, driven by the cluster reconciler) and their
history: one row per change of spec or phase, which billing meters from."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from tenantplane.db.base import Base, Versioned
from tenantplane.db.clock import database_time
from tenantplane.reconcile.lease import Leased

# An autoincrementing 64-bit key on PostgreSQL; SQLite autoincrements INTEGER keys only.
BigIntKey = BigInteger().with_variant(Integer(), "sqlite")


class ClusterPhase(enum.StrEnum):
    pending = "Pending"
    provisioning = "Provisioning"
    running = "Running"
    upgrading = "Upgrading"
    # The orchestrator could not deploy the spec (reason in the Ready condition's message).
    failed = "Failed"
    terminating = "Terminating"
    # Only in history: the cluster is gone.
    deleted = "Deleted"


class HaPhase(enum.StrEnum):
    none = ""
    pending = "pending"
    healthy = "ha-healthy"
    degraded = "ha-degraded"
    unavailable = "ha-unavailable"


class Cluster(Versioned, Leased, Base):
    __tablename__ = "clusters"
    __table_args__ = (UniqueConstraint("tenant_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # Identifies this incarnation to the orchestrator (a name may be reused after deletion).
    uid: Mapped[str] = mapped_column(String(32), unique=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(63))
    created_at: Mapped[datetime] = mapped_column(default=database_time)

    # Desired state (spec), written by the API.
    type: Mapped[str] = mapped_column(String(16), default="shared")
    version: Mapped[str] = mapped_column(String(16))  # "<major>.<minor>"
    high_availability: Mapped[bool] = mapped_column(Boolean, default=False)
    cpu: Mapped[str] = mapped_column(String(64))  # quantities as the client wrote them
    memory: Mapped[str] = mapped_column(String(64))
    storage: Mapped[str] = mapped_column(String(64))
    cpu_millicores: Mapped[int] = mapped_column(BigInteger)  # the same, normalised (limits,
    memory_bytes: Mapped[int] = mapped_column(BigInteger)  # billing); rounded up as
    storage_bytes: Mapped[int] = mapped_column(BigInteger)  # Kubernetes does
    alerts: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # Bumped by every spec change; the reconciler records the generation it acted on.
    generation: Mapped[int] = mapped_column(Integer, default=1)
    deletion_requested_at: Mapped[datetime | None] = mapped_column(default=None)

    # Observed state (status), written by the reconciler only.
    phase: Mapped[str] = mapped_column(String(20), default=ClusterPhase.pending.value)
    observed_generation: Mapped[int] = mapped_column(Integer, default=0)
    endpoint: Mapped[str] = mapped_column(String(255), default="")
    certificate_authority: Mapped[str] = mapped_column(Text, default="")
    kubernetes_version: Mapped[str] = mapped_column(String(32), default="")
    conditions: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    ha_configured: Mapped[bool] = mapped_column(Boolean, default=False)
    ha_enabled_at: Mapped[datetime | None] = mapped_column(default=None)
    ha_phase: Mapped[str] = mapped_column(String(20), default=HaPhase.none.value)
    ha_replicas_ready: Mapped[int] = mapped_column(Integer, default=0)
    ha_etcd_replicas_ready: Mapped[int] = mapped_column(Integer, default=0)

    @property
    def is_terminating(self) -> bool:
        return self.deletion_requested_at is not None


class ClusterEvent(enum.StrEnum):
    created = "created"
    spec_changed = "spec_changed"
    phase_changed = "phase_changed"
    ha_configured = "ha_configured"
    deleted = "deleted"


class ClusterHistory(Base):
    """A full snapshot of a cluster's billable state, valid from ``at`` until the next row
    of the same ``cluster_uid``. Rows are only ever inserted; they outlive the cluster."""

    __tablename__ = "cluster_history"
    __table_args__ = (
        Index("ix_cluster_history_tenant_id_at", "tenant_id", "at"),
        Index("ix_cluster_history_cluster_uid_at", "cluster_uid", "at"),
    )

    id: Mapped[int] = mapped_column(BigIntKey, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(default=database_time)
    # No foreign keys: history must survive the deletion of the cluster.
    tenant_id: Mapped[int] = mapped_column(Integer)
    cluster_id: Mapped[int] = mapped_column(Integer)
    cluster_uid: Mapped[str] = mapped_column(String(32))
    cluster_name: Mapped[str] = mapped_column(String(63))
    event: Mapped[str] = mapped_column(String(32))
    phase: Mapped[str] = mapped_column(String(20))
    version: Mapped[str] = mapped_column(String(16))
    kubernetes_version: Mapped[str] = mapped_column(String(32), default="")
    high_availability: Mapped[bool] = mapped_column(Boolean)
    ha_enabled_at: Mapped[datetime | None] = mapped_column(default=None)
    cpu_millicores: Mapped[int] = mapped_column(BigInteger)
    memory_bytes: Mapped[int] = mapped_column(BigInteger)
    storage_bytes: Mapped[int] = mapped_column(BigInteger)

    @classmethod
    def snapshot(
        cls, cluster: Cluster, event: ClusterEvent, at: datetime, phase: str | None = None
    ) -> ClusterHistory:
        return cls(**cls.values(cluster, event, at, phase=phase or cluster.phase))

    @staticmethod
    def values(
        cluster: Cluster, event: ClusterEvent, at: datetime, **changed: Any
    ) -> dict[str, Any]:
        """The columns of a snapshot of ``cluster`` (with the values ``changed`` that its
        row does not hold yet), for an INSERT without ORM objects (``record_all``)."""
        return (
            dict(
                at=at,
                tenant_id=cluster.tenant_id,
                cluster_id=cluster.id,
                cluster_uid=cluster.uid,
                cluster_name=cluster.name,
                event=event.value,
                phase=cluster.phase,
                version=cluster.version,
                kubernetes_version=cluster.kubernetes_version,
                high_availability=cluster.high_availability,
                ha_enabled_at=cluster.ha_enabled_at,
                cpu_millicores=cluster.cpu_millicores,
                memory_bytes=cluster.memory_bytes,
                storage_bytes=cluster.storage_bytes,
            )
            | changed
        )
