"""Sync providers: place copies of vault secrets into namespaces of tenant clusters.

The port is ``SyncProvider``. The default is the simulator (``simulator.py``), which records
what lives in which cluster namespace. A real adapter creates, per copy, an External Secrets
``SecretStore`` and ``ExternalSecret`` in the tenant cluster (docs/secrets.md shows both
shapes); the cluster then fetches the value from the vault itself, so no value ever passes
through tenantplane.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tenantplane.reconcile.fence import WriteFence


@dataclass(frozen=True)
class ClusterRef:
    """How to reach one incarnation of a tenant cluster."""

    uid: str
    name: str
    endpoint: str
    certificate_authority: str
    tenant: str = ""


@dataclass(frozen=True)
class CopySpec:
    """One copy of a vault secret: where it goes and where its value comes from."""

    tenant: str
    namespace: str
    name: str
    owner_uid: str  # the managed secret's uid, set as the owner label of the copy
    vault_mount: str
    secret_path: str


class SyncError(Exception):
    """The provider could not converge a copy (the message is shown in syncStatuses)."""


class SyncPending(SyncError):
    """The copy is written but the cluster has not reported it synced yet."""


class SyncProvider(Protocol):
    """Every write is made under ``fence``: held just before it, or in its transaction for
    a target kept in this database; ``LeaseLost`` from the fence stops the call."""

    async def apply(self, cluster: ClusterRef, copy: CopySpec, fence: WriteFence) -> bool:
        """Create or update the copy (idempotent). True when something was written."""

    async def remove(
        self, cluster: ClusterRef, namespace: str, name: str, owner_uid: str, fence: WriteFence
    ) -> None:
        """Remove the copy if ``owner_uid`` still owns it (idempotent; absent is fine)."""
