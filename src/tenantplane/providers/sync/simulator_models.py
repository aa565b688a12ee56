"""State of the simulated sync target: the Kubernetes Secrets that External Secrets would
have materialised in tenant clusters. Kept in the database so that it survives restarts of
tenantplane and is shared by the API and `tenantplane worker` processes, as a real cluster
would be. It records where a copy lives and where its value comes from, never a value."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from tenantplane.db.base import Base
from tenantplane.db.clock import database_time


class SimulatedSecretCopy(Base):
    __tablename__ = "simulator_secret_copies"

    cluster_uid: Mapped[str] = mapped_column(String(32), primary_key=True)
    namespace: Mapped[str] = mapped_column(String(63), primary_key=True)
    name: Mapped[str] = mapped_column(String(253), primary_key=True)
    # The managed secret (uid) that owns the copy; only its owner may remove it.
    owner_uid: Mapped[str] = mapped_column(String(32))
    vault_mount: Mapped[str] = mapped_column(String(128))
    secret_path: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(default=database_time)
    updated_at: Mapped[datetime] = mapped_column(default=database_time)
    # Journal of writes, for proving that a converged secret is not rewritten on every pass.
    write_count: Mapped[int] = mapped_column(Integer, default=1)
