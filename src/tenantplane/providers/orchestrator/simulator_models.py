"""State of the simulated host cluster: what a real vCluster deployment would keep in
Kubernetes. It lives in the database so that it survives restarts of tenantplane, as a
real host cluster would."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tenantplane.db.base import Base
from tenantplane.db.clock import database_time


class SimulatedCluster(Base):
    __tablename__ = "simulator_clusters"

    uid: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(63))
    high_availability: Mapped[bool] = mapped_column(Boolean)
    # creating → ready → upgrading → ready …; deleting → deleted.
    stage: Mapped[str] = mapped_column(String(16))
    step: Mapped[int] = mapped_column(Integer, default=0)
    last_step_at: Mapped[datetime] = mapped_column(default=database_time)
    version: Mapped[str] = mapped_column(String(16))  # minor currently running
    target_version: Mapped[str] = mapped_column(String(16))
    patch: Mapped[int] = mapped_column(Integer)
    cpu: Mapped[str] = mapped_column(String(64))
    memory: Mapped[str] = mapped_column(String(64))
    storage: Mapped[str] = mapped_column(String(64))
    control_plane_up: Mapped[int] = mapped_column(Integer, default=0)
    etcd_up: Mapped[int] = mapped_column(Integer, default=0)
    # Replicas made unhealthy by the operator (`tenantplane simulator fail-replica`).
    control_plane_failed: Mapped[int] = mapped_column(Integer, default=0)
    etcd_failed: Mapped[int] = mapped_column(Integer, default=0)
    endpoint: Mapped[str] = mapped_column(String(255))
    certificate_authority: Mapped[str] = mapped_column(Text)
    # Operations received, for proving that nothing was done twice: provisioning calls
    # (each call that found no deployment, concurrent ones included), upgrades started and
    # deletions started.
    provision_count: Mapped[int] = mapped_column(Integer, default=0)
    upgrade_count: Mapped[int] = mapped_column(Integer, default=0)
    delete_count: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(default=database_time)
