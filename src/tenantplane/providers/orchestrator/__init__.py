"""The orchestrator port: what the cluster reconciler asks of whatever runs clusters.

Both calls are idempotent and return what is observed now; the reconciler calls them again
until the observation settles. ``simulator`` (the default) behaves like vCluster on a host
cluster; a Kubernetes adapter implements the same protocol.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from tenantplane.reconcile.fence import WriteFence


# The longest names a cluster on Kubernetes can have (docs/api.md, "Names"): the etcd
# StatefulSet "<cluster>-etcd" labels its pods "controller-revision-hash: <cluster>-etcd-<hash>"
# (a label value, 63 at most, with a hash of up to 10), and the namespace "tp-<tenant>" is a
# DNS label (63). Helm's release name (53) is then never the limit.
CLUSTER_NAME_MAX_LENGTH = 47
TENANT_NAME_MAX_LENGTH = 60


def unrepresentable(cluster: str, tenant: str) -> str | None:
    """Why a cluster of these names cannot exist on Kubernetes, if it cannot."""
    if len(cluster) > CLUSTER_NAME_MAX_LENGTH:
        return (
            f"the cluster name {cluster!r} is longer than {CLUSTER_NAME_MAX_LENGTH} characters, "
            "too long for the Kubernetes objects of a cluster; create a cluster with a shorter name"
        )
    if len(tenant) > TENANT_NAME_MAX_LENGTH:
        return (
            f"the tenant name {tenant!r} is longer than {TENANT_NAME_MAX_LENGTH} characters, "
            "too long for its Kubernetes namespace"
        )
    return None


_PLACEHOLDERS = ("{cluster}", "{tenant}", "{namespace}")


def host_template_problem(template: str) -> str | None:
    """Why clusters' hosts made from ``template`` could collide, if they could.

    Names are DNS labels (no dot), so a host is unambiguous when each placeholder stands in a
    label of its own: "{cluster}-{tenant}" would make tenant "corp"'s cluster "dev-acme" and
    tenant "acme-corp"'s cluster "dev" one host. A host without {cluster} is every cluster's
    (a single fixed host, for a test bed); with it, the tenant must be named too.
    """
    host = template.split(":", 1)[0]
    for label in host.split("."):
        if sum(label.count(placeholder) for placeholder in _PLACEHOLDERS) > 1:
            return (
                f"{label!r} holds two names: put {{cluster}} and {{tenant}} in labels of their "
                "own (e.g. {cluster}.{tenant}.clusters.example.com)"
            )
    if "{cluster}" in host and "{tenant}" not in host and "{namespace}" not in host:
        return "names {cluster} but not {tenant}: clusters of two tenants would share a host"
    return None


@dataclass(frozen=True)
class TokenWebhook:
    """How a cluster's API server has tenants' tokens reviewed (Kubernetes' webhook token
    authentication): the review URL of this cluster, the bearer credential it presents
    there, the CA of the URL's certificate (base64 PEM; empty for a public one) and how long
    the API server keeps a review (which bounds how long a revoked token still works)."""

    url: str
    credential: str = field(repr=False)
    certificate_authority: str = ""
    cache_ttl: str = "30s"


@dataclass(frozen=True)
class ClusterSpec:
    uid: str
    name: str
    tenant: str
    version: str  # "<major>.<minor>"
    patch: int  # the patch the catalogue deploys for that minor
    high_availability: bool
    cpu: str
    memory: str
    storage: str
    # The tenant's plan pool (cpu, memory, storage): the quota of the tenant's namespace.
    pool: Mapping[str, str] = field(default_factory=dict)
    # How the cluster authenticates tenants' kubectl (None: not wired, e.g. the simulator's
    # clusters, which have no API server to wire).
    token_webhook: TokenWebhook | None = None


@dataclass(frozen=True)
class Replicas:
    desired: int
    ready: int


class Stage:
    """Where a cluster's deployment stands, as the orchestrator reports it."""

    creating = "creating"
    ready = "ready"  # the API server serves (replicas may still be scaling up)
    upgrading = "upgrading"
    deleting = "deleting"
    gone = "gone"
    failed = "failed"  # the deployment failed; ``message`` says why


@dataclass(frozen=True)
class Observation:
    stage: str
    version: str = ""  # minor currently running
    kubernetes_version: str = ""  # "v1.33.5"
    endpoint: str = ""
    certificate_authority: str = ""  # base64 of the PEM CA certificate
    control_plane: Replicas = Replicas(0, 0)
    etcd: Replicas = Replicas(0, 0)
    # Nothing is in progress: the next look can wait for the resync interval.
    settled: bool = False
    message: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    # Seconds from now until the orchestrator's next change is due, when it knows (the
    # simulator's next step): the next look is then rather than a whole polling interval
    # after this one, which would add up to an interval per step.
    next_change_seconds: float | None = None
    # This process's monotonic clock when the observation was made: what reads it later
    # counts ``next_change_seconds`` from then, not from when it reads it.
    observed_at: float = field(default_factory=time.monotonic, compare=False, repr=False)

    @property
    def api_available(self) -> bool:
        quorum = self.etcd.desired // 2 + 1
        return self.control_plane.ready >= 1 and self.etcd.ready >= quorum


class Orchestrator(Protocol):
    """Every write is made under ``fence`` (held just before it, or in its transaction for
    a host kept in this database); ``LeaseLost`` from the fence stops the call."""

    async def apply(self, spec: ClusterSpec, fence: WriteFence) -> Observation:
        """Create the cluster or move it towards ``spec``; report what is observed."""

    async def delete(self, spec: ClusterSpec, fence: WriteFence) -> Observation:
        """Tear the cluster down; ``Stage.gone`` once nothing is left."""


@runtime_checkable
class BatchOrchestrator(Orchestrator, Protocol):
    async def act_many(self, calls: Sequence[tuple[ClusterSpec, bool]]) -> list[Observation]:
        """``apply`` (``delete`` where the flag is set) for several clusters at once, one
        observation per call in order; an orchestrator that can do them together (the
        simulator: one transaction) declares it, the others are called one by one. The
        caller holds each row's fence just before the call."""


@runtime_checkable
class InDatabaseOrchestrator(BatchOrchestrator, Protocol):
    async def act_many_in(
        self, session: AsyncSession, calls: Sequence[tuple[ClusterSpec, bool]]
    ) -> list[Observation]:
        """``act_many`` in the caller's transaction: an orchestrator that keeps its state in
        tenantplane's own database (the simulator) is a few statements there, not a remote
        call, so the reconciler makes them in the transaction that records what they
        observed (one transaction per batch and look instead of two)."""
