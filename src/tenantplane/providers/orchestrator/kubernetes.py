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
import copy
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog

from tenantplane.providers.kube import (
    LABEL_CLUSTER,
    LABEL_CLUSTER_UID,
    LABEL_MANAGED_BY,
    LABEL_TENANT,
    Kube,
    Manifest,
    condition,
    dig,
    tenant_namespace,
)
from tenantplane.providers.orchestrator import ClusterSpec, Observation, Replicas, Stage
from tenantplane.reconcile.fence import WriteFence

if TYPE_CHECKING:
    from tenantplane.config import Settings

log = structlog.get_logger(__name__)

ENCRYPTION_MOUNT = "/etc/vcluster-encryption"
CHART_SOURCE = "vcluster"


@dataclass(frozen=True)
class ChartSettings:
    repository: str
    version: str
    host_template: str
    extra_values: dict[str, Any] = field(default_factory=dict)


def replicas_desired(high_availability: bool) -> int:
    return 3 if high_availability else 1


class KubernetesOrchestrator:
    def __init__(self, kube: Kube, chart: ChartSettings) -> None:
        self.kube = kube
        self.chart = chart

    async def apply(self, spec: ClusterSpec, fence: WriteFence) -> Observation:
        # Each write under the lease, held just before it (reconcile/fence.py).
        namespace = tenant_namespace(spec.tenant)
        for manifest in tenant_manifests(spec, self.chart):
            await fence.hold()
            await self.kube.apply(manifest)
        await fence.hold()
        await self.kube.create_if_absent(encryption_secret(spec, namespace))
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
        chart_labels = {"release": spec.name}
        await fence.hold()
        left = await self.kube.delete_labelled("PersistentVolumeClaim", namespace, chart_labels)
        left += await self.kube.delete_labelled("Secret", namespace, chart_labels)
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
        control_plane = await self.kube.get("StatefulSet", spec.name, namespace)
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
            # Default deny: only pods of this namespace may connect to its pods.
            "spec": {
                "podSelector": {},
                "policyTypes": ["Ingress"],
                "ingress": [{"from": [{"podSelector": {}}]}],
            },
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


def external_host(spec: ClusterSpec, template: str) -> str:
    return template.format(
        cluster=spec.name, tenant=spec.tenant, namespace=tenant_namespace(spec.tenant)
    )


def kubernetes_version(spec: ClusterSpec) -> str:
    return f"v{spec.version}.{spec.patch}"


def vcluster_values(spec: ClusterSpec, chart: ChartSettings) -> dict[str, Any]:
    replicas = replicas_desired(spec.high_availability)
    resources = {"cpu": spec.cpu, "memory": spec.memory}
    platform: dict[str, Any] = {
        "controlPlane": {
            "distro": {
                "k8s": {
                    "enabled": True,
                    "image": {"tag": kubernetes_version(spec)},
                    "apiServer": {
                        "extraArgs": [
                            f"--encryption-provider-config={ENCRYPTION_MOUNT}/config.yaml"
                        ]
                    },
                }
            },
            "statefulSet": {
                "highAvailability": {"replicas": replicas},
                "resources": {"limits": resources, "requests": resources},
                "persistence": {
                    "volumeClaim": {"size": spec.storage},
                    "addVolumes": [
                        {"name": "encryption", "secret": {"secretName": f"{spec.name}-encryption"}}
                    ],
                    "addVolumeMounts": [
                        {"name": "encryption", "mountPath": ENCRYPTION_MOUNT, "readOnly": True}
                    ],
                },
            },
            "backingStore": {
                "etcd": {
                    "deploy": {
                        "enabled": True,
                        "statefulSet": {"highAvailability": {"replicas": replicas}},
                    }
                }
            },
            "proxy": {"extraSANs": [external_host(spec, chart.host_template)]},
        }
    }
    return deep_merge(chart.extra_values, platform)


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``override`` over ``base``, maps merged key by key (the platform's values win)."""
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


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


def _replicas(statefulset: Manifest | None, desired: int) -> Replicas:
    if statefulset is None:
        return Replicas(desired, 0)
    return Replicas(desired, int(dig(statefulset, "status", "readyReplicas", default=0) or 0))


def _rolling(statefulset: Manifest | None) -> bool:
    if statefulset is None:
        return False
    status = statefulset.get("status") or {}
    return bool(status.get("updateRevision")) and status.get("currentRevision") != status.get(
        "updateRevision"
    )


def _released(release: Manifest) -> bool:
    """The release's current values have been installed successfully (Ready, up to date)."""
    ready = condition(release, "Ready")
    observed = dig(release, "status", "observedGeneration")
    return ready.get("status") == "True" and observed == release["metadata"].get("generation")


def _failure(release: Manifest) -> str | None:
    ready = condition(release, "Ready")
    observed = dig(release, "status", "observedGeneration")
    if ready.get("status") == "False" and observed == release["metadata"].get("generation"):
        return f"{ready.get('reason', 'Failed')}: {ready.get('message', '')}"
    return None


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
    base = Observation(stage=Stage.creating, control_plane=control_plane, etcd=etcd)
    if release is None:
        return _with(base, message="waiting for the release", metrics=metrics)
    if "deletionTimestamp" in release["metadata"]:
        return _with(base, stage=Stage.deleting, message=f"deleting: {replicas}")
    failure = _failure(release)
    if failure is not None:
        return _with(base, stage=Stage.failed, message=failure, metrics=metrics)
    installed_before = bool(dig(release, "status", "history"))
    released = _released(release)
    rolling = _rolling(control_plane_set) or _rolling(etcd_set)
    serving = kubeconfig is not None and (installed_before or base.api_available)
    if not serving:
        progress = condition(release, "Ready").get("message") or "installing"
        return _with(base, message=f"{progress}: {replicas}", metrics=metrics)
    data = kubeconfig.get("data") or {} if kubeconfig is not None else {}
    endpoint = f"https://{external_host(spec, chart.host_template)}:443"
    upgrading = installed_before and (not released or rolling)
    if upgrading:
        return _with(
            base,
            stage=Stage.upgrading,
            endpoint=endpoint,
            certificate_authority=data.get("certificate-authority", ""),
            message=f"upgrading to {kubernetes_version(spec)}: {replicas}",
            metrics=metrics,
        )
    fully_up = control_plane.ready == desired and etcd.ready == desired
    return _with(
        base,
        stage=Stage.ready,
        version=spec.version,
        kubernetes_version=kubernetes_version(spec),
        endpoint=endpoint,
        certificate_authority=data.get("certificate-authority", ""),
        settled=released and fully_up,
        message=replicas,
        metrics=metrics,
    )


def _with(observation: Observation, **changes: Any) -> Observation:
    from dataclasses import replace

    return replace(observation, **changes)


def chart_settings(settings: Settings) -> ChartSettings:
    import yaml

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
    )


def build_kubernetes_orchestrator(
    settings: Settings,
) -> tuple[KubernetesOrchestrator, Callable[[], Awaitable[None]]]:
    from tenantplane.providers.kube import client_for, load_kubeconfig

    config = load_kubeconfig(settings.kubeconfig, settings.kubernetes_context)
    kube = Kube(client_for(config, settings.kubernetes_timeout_seconds))
    return KubernetesOrchestrator(kube, chart_settings(settings)), kube.aclose
