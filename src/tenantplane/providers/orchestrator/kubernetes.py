"""The Kubernetes orchestrator: vCluster in a tenant namespace of a host cluster, installed
by Flux (a ``HelmRelease`` of the vCluster chart) and observed through what it runs.

Per tenant: namespace ``tp-<tenant>`` (labelled), a ``ResourceQuota`` equal to the plan's
pool, a default-deny ``NetworkPolicy`` (traffic only from inside the namespace) and the
``HelmRepository`` of the chart. Per cluster: the ``HelmRelease`` named after the cluster and
a Secret ``<cluster>-encryption`` holding the etcd encryption-at-rest key (created once,
never rewritten). Every write is a server-side apply under one field manager, so calling
``apply`` again with the same spec changes nothing; the reconciler calls it outside any
database transaction and retries a failed call after its backoff. docs/kubernetes.md.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog
import yaml

from tenantplane.providers.kube import (
    LABEL_CLUSTER,
    LABEL_CLUSTER_UID,
    LABEL_MANAGED_BY,
    LABEL_TENANT,
    Kube,
    Manifest,
    dig,
    tenant_namespace,
)
from tenantplane.providers.orchestrator import (
    ClusterSpec,
    Observation,
    Replicas,
    Stage,
    TokenWebhook,
    cluster_access,
    unrepresentable,
)
from tenantplane.providers.orchestrator.flux import release_state
from tenantplane.providers.orchestrator.vcluster_values import (
    CONTROL_PLANE_LABEL,
    kubernetes_version,
    replicas_desired,
    vcluster_values,
)
from tenantplane.reconcile.fence import WriteFence

if TYPE_CHECKING:
    from tenantplane.config import Settings

log = structlog.get_logger(__name__)

CHART_SOURCE = "vcluster"
# What vCluster labels the Secrets it writes at run time with (vc-<cluster>, certificates):
# pkg/setup/config.go. They are owned by the cluster's Service and go with it; deletion
# removes any left over.
VCLUSTER_NAME_LABEL = "vcluster-name"
# Default limits for workload containers that name none (pods vCluster syncs into the tenant's
# namespace): a quota on limits refuses a pod without them. As the chart's own LimitRange.
WORKLOAD_DEFAULTS = {
    "default": {"cpu": "1", "memory": "512Mi"},
    "defaultRequest": {"cpu": "100m", "memory": "128Mi"},
}
# The port of the vCluster API server in its pods (the chart's Service targets it).
API_SERVER_PORT = 8443


@dataclass(frozen=True)
class ChartSettings:
    repository: str
    version: str
    host_template: str
    extra_values: dict[str, Any] = field(default_factory=dict)
    release_timeout: str = "10m"


class KubernetesOrchestrator:
    def __init__(self, kube: Kube, chart: ChartSettings) -> None:
        self.kube = kube
        self.chart = chart

    async def apply(self, spec: ClusterSpec, fence: WriteFence) -> Observation:
        refused = unrepresentable(spec.name, spec.tenant)
        if refused is not None:
            # Nothing is written: the cluster shows Failed with this message.
            return Observation(stage=Stage.failed, message=refused)
        # Each write under the lease, held just before it (reconcile/fence.py).
        namespace = tenant_namespace(spec.tenant)
        for manifest in tenant_manifests(spec, self.chart):
            await fence.hold()
            await self.kube.apply(manifest)
        await fence.hold()
        await self.kube.create_if_absent(encryption_secret(spec, namespace))
        if spec.token_webhook is not None:
            await fence.hold()
            await self.kube.apply(token_webhook_secret(spec, spec.token_webhook, namespace))
        await fence.hold()
        await self.kube.apply(helm_release(spec, namespace, self.chart))
        return await self.observe(spec)

    async def delete(self, spec: ClusterSpec, fence: WriteFence) -> Observation:
        """Release first (Flux uninstalls the chart), then what the chart leaves behind (the
        StatefulSets' PVCs, vCluster's Secrets), then the namespace if nothing else is in it."""
        namespace = tenant_namespace(spec.tenant)
        release = await self.kube.get("HelmRelease", spec.name, namespace)
        if release is not None:
            if "deletionTimestamp" not in release["metadata"]:
                await fence.hold()
                await self.kube.delete("HelmRelease", spec.name, namespace)
            return Observation(stage=Stage.deleting, message="uninstalling the vCluster release")
        await fence.hold()
        # The etcd StatefulSet's claims carry its selector's labels (app, release).
        left = await self.kube.delete_labelled(
            "PersistentVolumeClaim", namespace, {"release": spec.name}
        )
        left += await self.kube.delete_labelled(
            "Secret", namespace, {VCLUSTER_NAME_LABEL: spec.name}
        )
        left += await self.kube.delete_labelled("Secret", namespace, {LABEL_CLUSTER_UID: spec.uid})
        if left:
            return Observation(stage=Stage.deleting, message="removing volumes and secrets")
        if not await self.kube.list("HelmRelease", namespace):
            # The tenant's last cluster: its namespace (quota, policy, source) goes too.
            await fence.hold()
            await self.kube.delete("Namespace", namespace)
        return Observation(stage=Stage.gone, settled=True, message="deleted")

    async def observe(self, spec: ClusterSpec) -> Observation:
        namespace = tenant_namespace(spec.tenant)
        release = await self.kube.get("HelmRelease", spec.name, namespace)
        control_plane = await self.kube.get("Deployment", spec.name, namespace)
        etcd = await self.kube.get("StatefulSet", f"{spec.name}-etcd", namespace)
        kubeconfig = await self.kube.get("Secret", f"vc-{spec.name}", namespace)
        return observation_of(spec, self.chart, release, control_plane, etcd, kubeconfig)


# -- manifests ------------------------------------------------------------------------------


def _labels(spec: ClusterSpec, **extra: str) -> dict[str, str]:
    return {LABEL_MANAGED_BY: "tenantplane", LABEL_TENANT: spec.tenant, **extra}


def tenant_manifests(spec: ClusterSpec, chart: ChartSettings) -> list[Manifest]:
    namespace = tenant_namespace(spec.tenant)
    labels = _labels(spec)
    metadata = {"namespace": namespace, "labels": labels}
    manifests: list[Manifest] = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace, "labels": labels},
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "tenant-isolation", **metadata},
            # Default deny: only pods of this namespace may connect to its pods (etcd, the
            # tenant's workloads)...
            "spec": {
                "podSelector": {},
                "policyTypes": ["Ingress"],
                "ingress": [{"from": [{"podSelector": {}}]}],
            },
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "control-plane-api", **metadata},
            # ...except the clusters' API servers, which must be reached from outside it:
            # by the ingress controller, the worker (secret sync) and the vault (TokenReview).
            # They authenticate every request themselves.
            "spec": {
                "podSelector": {"matchLabels": {"app": CONTROL_PLANE_LABEL}},
                "policyTypes": ["Ingress"],
                "ingress": [{"ports": [{"protocol": "TCP", "port": API_SERVER_PORT}]}],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"name": "workload-defaults", **metadata},
            "spec": {"limits": [{"type": "Container", **WORKLOAD_DEFAULTS}]},
        },
        {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "HelmRepository",
            "metadata": {"name": CHART_SOURCE, **metadata},
            "spec": {"interval": "1h", "url": chart.repository},
        },
    ]
    if spec.pool:
        manifests.insert(
            1,
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": "plan", **metadata},
                "spec": {
                    "hard": {
                        "limits.cpu": spec.pool["cpu"],
                        "limits.memory": spec.pool["memory"],
                        "requests.storage": spec.pool["storage"],
                    }
                },
            },
        )
    return manifests


def encryption_secret(spec: ClusterSpec, namespace: str) -> Manifest:
    """The API server's EncryptionConfiguration: Secrets in etcd encrypted with a key made
    for this cluster (created once: a new key would make what etcd holds unreadable)."""
    key = base64.b64encode(secrets.token_bytes(32)).decode()
    config = (
        "apiVersion: apiserver.config.k8s.io/v1\n"
        "kind: EncryptionConfiguration\n"
        "resources:\n"
        "  - resources: [secrets, configmaps]\n"
        "    providers:\n"
        "      - secretbox:\n"
        "          keys:\n"
        f"            - name: key1\n              secret: {key}\n"
        "      - identity: {}\n"
    )
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"{spec.name}-encryption",
            "namespace": namespace,
            "labels": _labels(spec, **{LABEL_CLUSTER: spec.name, LABEL_CLUSTER_UID: spec.uid}),
        },
        "type": "Opaque",
        "stringData": {"config.yaml": config},
    }


def token_webhook_secret(spec: ClusterSpec, webhook: TokenWebhook, namespace: str) -> Manifest:
    """The API server's token webhook kubeconfig (applied each time: a rotated secret key or
    a moved webhook URL reaches the cluster at its next look; the API server reads the file
    when it starts)."""
    kubeconfig = cluster_access.webhook_kubeconfig(webhook).encode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": cluster_access.secret_name(spec.name),
            "namespace": namespace,
            "labels": _labels(spec, **{LABEL_CLUSTER: spec.name, LABEL_CLUSTER_UID: spec.uid}),
        },
        "type": "Opaque",
        "data": {cluster_access.KUBECONFIG_KEY: base64.b64encode(kubeconfig).decode()},
    }


def helm_release(spec: ClusterSpec, namespace: str, chart: ChartSettings) -> Manifest:
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": spec.name,
            "namespace": namespace,
            "labels": _labels(spec, **{LABEL_CLUSTER: spec.name, LABEL_CLUSTER_UID: spec.uid}),
        },
        "spec": {
            "interval": "10m",
            "timeout": chart.release_timeout,
            "releaseName": spec.name,
            "chart": {
                "spec": {
                    "chart": "vcluster",
                    "version": chart.version,
                    "sourceRef": {"kind": "HelmRepository", "name": CHART_SOURCE},
                }
            },
            "install": {"remediation": {"retries": 3}},
            "upgrade": {"remediation": {"retries": 3}},
            "values": vcluster_values(spec, chart),
        },
    }


# -- observation ----------------------------------------------------------------------------


def _replicas(workload: Manifest | None, desired: int) -> Replicas:
    if workload is None:
        return Replicas(desired, 0)
    return Replicas(desired, int(dig(workload, "status", "readyReplicas", default=0) or 0))


def _rolling(workload: Manifest | None) -> bool:
    """A Deployment or StatefulSet whose pods are not all of its current template yet.

    A pod missing is not a rollout: when one is deleted or evicted, the Deployment reports
    fewer replicas, all of them updated, until its ReplicaSet replaces the pod (a window as
    long as the replacement is refused). Counting updated pods against the wanted number
    called that an upgrade, and the API refused a version change of a Running cluster."""
    if workload is None:
        return False
    status = workload.get("status") or {}
    if status.get("observedGeneration") != workload["metadata"].get("generation"):
        return True
    if workload["kind"] == "StatefulSet":
        update = status.get("updateRevision")
        return bool(update) and status.get("currentRevision") != update
    # Pods of an older ReplicaSet are still counted: the rollout has not finished.
    return int(status.get("replicas") or 0) > int(status.get("updatedReplicas") or 0)


def _kubeconfig_server(kubeconfig: Manifest) -> str:
    """The server in vCluster's kubeconfig (``exportKubeConfig.server`` once it applies)."""
    encoded = (kubeconfig.get("data") or {}).get("config")
    if not encoded:
        return ""
    config = yaml.safe_load(base64.b64decode(encoded)) or {}
    clusters = config.get("clusters") or [{}]
    return str(dig(clusters[0], "cluster", "server", default="") or "")


def observation_of(
    spec: ClusterSpec,
    chart: ChartSettings,
    release: Manifest | None,
    control_plane_set: Manifest | None,
    etcd_set: Manifest | None,
    kubeconfig: Manifest | None,
) -> Observation:
    desired = replicas_desired(spec.high_availability)
    control_plane = _replicas(control_plane_set, desired)
    etcd = _replicas(etcd_set, desired)
    replicas = (
        f"control plane {control_plane.ready}/{desired} ready, etcd {etcd.ready}/{desired} ready"
    )
    metrics = {
        "controlPlaneReplicasReady": control_plane.ready,
        "etcdReplicasReady": etcd.ready,
        "allocatable": {"cpu": spec.cpu, "memory": spec.memory, "storage": spec.storage},
    }
    base = Observation(
        stage=Stage.creating, control_plane=control_plane, etcd=etcd, metrics=metrics
    )
    if release is None:
        return _with(base, message="waiting for the release")
    if "deletionTimestamp" in release["metadata"]:
        return _with(base, stage=Stage.deleting, message=f"deleting: {replicas}")
    state = release_state(release)
    if state.stalled is not None:
        return _with(base, stage=Stage.failed, message=f"Flux stopped: {state.stalled}")
    server = _kubeconfig_server(kubeconfig) if kubeconfig is not None else ""
    serving = bool(server) and (state.installed or base.api_available)
    if not serving:
        return _with(base, message=f"{state.progress}: {replicas}")
    certificate_authority = (kubeconfig or {}).get("data", {}).get("certificate-authority", "")
    connection = {"endpoint": server, "certificate_authority": certificate_authority}
    rolling = _rolling(control_plane_set) or _rolling(etcd_set)
    # While the first install runs, what it installs may serve already (Running), but a
    # change applied meanwhile (a resize) waits for Flux's next attempt: until then it is
    # upgrading, or a wait for it would end before Flux took it up (found on the bed).
    if (state.installed and (not state.current or rolling)) or state.behind:
        return _with(
            base,
            stage=Stage.upgrading,
            message=f"upgrading to {kubernetes_version(spec)}: {replicas}",
            **connection,
        )
    fully_up = control_plane.ready == desired and etcd.ready == desired
    # Released, or the last release still serving while Flux retries a transient error
    # (its source or artifact unavailable): Running, not settled, Flux's word in the message.
    message = replicas if state.released else f"{replicas}; Flux: {state.progress}"
    return _with(
        base,
        stage=Stage.ready,
        version=spec.version,
        kubernetes_version=kubernetes_version(spec),
        settled=state.released and fully_up,
        message=message,
        **connection,
    )


def _with(observation: Observation, **changes: Any) -> Observation:
    from dataclasses import replace

    return replace(observation, **changes)


def chart_settings(settings: Settings) -> ChartSettings:
    extra: dict[str, Any] = {}
    if settings.vcluster_values_file is not None:
        loaded = yaml.safe_load(settings.vcluster_values_file.read_text(encoding="utf-8"))
        if not isinstance(loaded, dict):
            raise ValueError(f"{settings.vcluster_values_file} is not a map of chart values")
        extra = loaded
    return ChartSettings(
        repository=settings.vcluster_chart_repository,
        version=settings.vcluster_chart_version,
        host_template=settings.cluster_host_template,
        extra_values=extra,
        release_timeout=settings.vcluster_release_timeout,
    )


def build_kubernetes_orchestrator(
    settings: Settings,
) -> tuple[KubernetesOrchestrator, Callable[[], Awaitable[None]]]:
    from tenantplane.providers.kube import client_for, load_kubeconfig

    config = load_kubeconfig(settings.kubeconfig, settings.kubernetes_context)
    kube = Kube(client_for(config, settings.kubernetes_timeout_seconds))
    return KubernetesOrchestrator(kube, chart_settings(settings)), kube.aclose
