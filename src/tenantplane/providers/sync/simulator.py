"""The simulator sync provider: copies recorded in ``simulator_secret_copies``."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, select

from tenantplane.db.clock import clock_of
from tenantplane.db.engine import Database
from tenantplane.providers.sync import ClusterRef, CopySpec
from tenantplane.providers.sync.simulator_models import SimulatedSecretCopy
from tenantplane.reconcile.fence import WriteFence


class SimulatorSyncProvider:
    """Behaves like External Secrets in a cluster: a copy per (cluster, namespace, name),
    labelled with its owner; applying the same spec again writes nothing."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def apply(self, cluster: ClusterRef, copy: CopySpec, fence: WriteFence) -> bool:
        async with self.database.transaction() as session:
            # The lease is proved in the write's own transaction (and its row locked until
            # commit): a worker that lost it writes nothing, ever.
            await fence.hold_in(session)
            key = (cluster.uid, copy.namespace, copy.name)
            existing = await session.get(SimulatedSecretCopy, key, with_for_update=True)
            if existing is None:
                session.add(
                    SimulatedSecretCopy(
                        cluster_uid=cluster.uid,
                        namespace=copy.namespace,
                        name=copy.name,
                        owner_uid=copy.owner_uid,
                        vault_mount=copy.vault_mount,
                        secret_path=copy.secret_path,
                    )
                )
                return True
            wanted = (copy.owner_uid, copy.vault_mount, copy.secret_path)
            if (existing.owner_uid, existing.vault_mount, existing.secret_path) == wanted:
                return False
            existing.owner_uid, existing.vault_mount, existing.secret_path = wanted
            existing.updated_at = await clock_of(session).now()
            existing.write_count += 1
            return True

    async def remove(
        self, cluster: ClusterRef, namespace: str, name: str, owner_uid: str, fence: WriteFence
    ) -> None:
        async with self.database.transaction() as session:
            await fence.hold_in(session)
            await session.execute(
                delete(SimulatedSecretCopy).where(
                    SimulatedSecretCopy.cluster_uid == cluster.uid,
                    SimulatedSecretCopy.namespace == namespace,
                    SimulatedSecretCopy.name == name,
                    SimulatedSecretCopy.owner_uid == owner_uid,
                )
            )

    async def copies(self, cluster_uid: str | None = None) -> Sequence[SimulatedSecretCopy]:
        """What lives where (for operators and tests), ordered by cluster, namespace, name."""
        statement = select(SimulatedSecretCopy).order_by(
            SimulatedSecretCopy.cluster_uid,
            SimulatedSecretCopy.namespace,
            SimulatedSecretCopy.name,
        )
        if cluster_uid is not None:
            statement = statement.where(SimulatedSecretCopy.cluster_uid == cluster_uid)
        async with self.database.sessionmaker() as session:
            return (await session.execute(statement)).scalars().all()
