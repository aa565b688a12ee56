"""What the secret reconciler works from (a secret's row and its clusters, read under the
lease) and what one pass over a secret found."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tenantplane.cluster.models import Cluster, ClusterPhase
from tenantplane.providers.sync import ClusterRef
from tenantplane.providers.vault import PathCheck

CopyKey = tuple[str, str, str]  # (cluster uid, namespace, secret name)


@dataclass(frozen=True)
class ClusterView:
    uid: str
    name: str
    phase: str
    deleting: bool
    endpoint: str
    certificate_authority: str

    def ref(self, tenant: str) -> ClusterRef:
        return ClusterRef(self.uid, self.name, self.endpoint, self.certificate_authority, tenant)

    @property
    def is_running(self) -> bool:
        return self.phase == ClusterPhase.running.value and not self.deleting

    @classmethod
    def of(cls, cluster: Cluster) -> ClusterView:
        return cls(
            uid=cluster.uid,
            name=cluster.name,
            phase=cluster.phase,
            deleting=cluster.is_terminating,
            endpoint=cluster.endpoint,
            certificate_authority=cluster.certificate_authority,
        )


@dataclass(frozen=True)
class SecretView:
    id: int
    uid: str
    tenant_id: int
    tenant: str
    name: str
    secret_path: str
    generation: int
    deleting: bool
    targets: list[dict[str, str]]
    applied: list[dict[str, str]]
    phase: str
    statuses: list[dict[str, Any]]
    conditions: list[dict[str, Any]]
    clusters_by_name: dict[str, ClusterView]
    clusters_by_uid: dict[str, ClusterView]

    def live_cluster(self, name: str) -> ClusterView | None:
        """The cluster a target names, unless it is gone or being deleted."""
        cluster = self.clusters_by_name.get(name)
        return None if cluster is None or cluster.deleting else cluster


@dataclass
class SyncOutcome:
    path: PathCheck | None
    statuses: list[dict[str, Any]] = field(default_factory=list)
    applied: list[dict[str, str]] = field(default_factory=list)
    # Copies that could not be removed yet (cluster not Running): try again soon.
    removals_pending: int = 0


def copy_key(entry: dict[str, str]) -> CopyKey:
    return (entry["clusterUid"], entry["namespace"], entry["secretName"])


def applied_entry(cluster: ClusterView, target: dict[str, str]) -> dict[str, str]:
    return {
        "clusterUid": cluster.uid,
        "cluster": cluster.name,
        "namespace": target["namespace"],
        "secretName": target["secretName"],
    }
