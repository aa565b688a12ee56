"""The vCluster chart's values for one cluster (the chart version pinned in the settings).

Checked against the real chart on the test bed (tests/kubernetes) and its ``helm template``:
with a deployed etcd and ``persistence.volumeClaim.enabled: false`` the control plane is a
Deployment ``<cluster>`` (pods labelled ``app=vcluster,release=<cluster>``), etcd a StatefulSet
``<cluster>-etcd`` (``app=vcluster-etcd,release=<cluster>``) whose volumes come from its
volumeClaimTemplates. docs/kubernetes.md, "Resources and the plan's quota".
"""

from __future__ import annotations

import copy
from decimal import ROUND_FLOOR, Decimal
from typing import TYPE_CHECKING, Any

from lightkube.utils.quantity import parse_quantity

from tenantplane.providers.orchestrator import cluster_access

if TYPE_CHECKING:
    from tenantplane.providers.orchestrator import ClusterSpec
    from tenantplane.providers.orchestrator.kubernetes import ChartSettings

ENCRYPTION_MOUNT = "/etc/vcluster-encryption"
CONTROL_PLANE_LABEL = "vcluster"  # app=<this> on the control plane's pods
ETCD_LABEL = "vcluster-etcd"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"

# Of a cluster's resources, the share its control plane takes in the host namespace: the API
# server replicas 3/8, the etcd members 1/8 (split evenly over the replicas); the other half
# is for the workloads vCluster syncs into the namespace, under the tenant's ResourceQuota.
API_SERVER_SHARE = Decimal(3) / 8
ETCD_SHARE = Decimal(1) / 8
# etcd's volumes together take half of the cluster's storage; the rest is for workloads' PVCs.
ETCD_STORAGE_SHARE = Decimal(1) / 2
# CoreDNS runs inside the tenant cluster; its synced pod is a workload like any other.
COREDNS_RESOURCES = {
    "limits": {"cpu": "100m", "memory": "170Mi"},
    "requests": {"cpu": "20m", "memory": "64Mi"},
}


def replicas_desired(high_availability: bool) -> int:
    return 3 if high_availability else 1


def external_host(spec: ClusterSpec, template: str) -> str:
    return template.format(cluster=spec.name, tenant=spec.tenant, namespace=f"tp-{spec.tenant}")


def kubernetes_version(spec: ClusterSpec) -> str:
    return f"v{spec.version}.{spec.patch}"


def cpu_share(total: str, share: Decimal, parts: int) -> str:
    """``total`` * ``share`` / ``parts`` in whole millicores (rounded down, at least 1m)."""
    millis = (parse_quantity(total) or Decimal(0)) * 1000 * share / parts
    return f"{max(int(millis.to_integral_value(ROUND_FLOOR)), 1)}m"


def bytes_share(total: str, share: Decimal, parts: int) -> str:
    """``total`` * ``share`` / ``parts`` in whole mebibytes (rounded down, at least 1Mi)."""
    mebibytes = (parse_quantity(total) or Decimal(0)) * share / parts / 2**20
    return f"{max(int(mebibytes.to_integral_value(ROUND_FLOOR)), 1)}Mi"


def pod_resources(spec: ClusterSpec, share: Decimal, replicas: int) -> dict[str, Any]:
    """Requests equal to limits (Guaranteed): the quota counts exactly what is given."""
    amounts = {
        "cpu": cpu_share(spec.cpu, share, replicas),
        "memory": bytes_share(spec.memory, share, replicas),
    }
    return {"limits": dict(amounts), "requests": dict(amounts)}


def anti_affinity(app: str, release: str) -> dict[str, Any]:
    """HA replicas on distinct nodes (required) and, where possible, distinct zones."""
    selector = {"matchLabels": {"app": app, "release": release}}
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": selector, "topologyKey": HOSTNAME}
            ],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": {"labelSelector": selector, "topologyKey": ZONE}}
            ],
        }
    }


def vcluster_values(spec: ClusterSpec, chart: ChartSettings) -> dict[str, Any]:
    replicas = replicas_desired(spec.high_availability)
    host = external_host(spec, chart.host_template)
    hostname = host.split(":")[0]  # a port in the template stays in the server only
    api_server = pod_resources(spec, API_SERVER_SHARE, replicas)
    etcd_set: dict[str, Any] = {
        "highAvailability": {"replicas": replicas},
        "resources": pod_resources(spec, ETCD_SHARE, replicas),
        "persistence": {
            "volumeClaim": {"size": bytes_share(spec.storage, ETCD_STORAGE_SHARE, replicas)}
        },
    }
    control_plane_set: dict[str, Any] = {
        "highAvailability": {"replicas": replicas},
        "resources": api_server,
        "persistence": {
            # The data is in the deployed etcd: the control plane is a Deployment.
            "volumeClaim": {"enabled": False},
            "addVolumes": [
                {"name": "encryption", "secret": {"secretName": f"{spec.name}-encryption"}}
            ],
            "addVolumeMounts": [
                {"name": "encryption", "mountPath": ENCRYPTION_MOUNT, "readOnly": True}
            ],
        },
    }
    api_server_args = [f"--encryption-provider-config={ENCRYPTION_MOUNT}/config.yaml"]
    if spec.token_webhook is not None:
        persistence = control_plane_set["persistence"]
        persistence["addVolumes"].append(
            {
                "name": "token-webhook",
                "secret": {"secretName": cluster_access.secret_name(spec.name)},
            }
        )
        persistence["addVolumeMounts"].append(
            {"name": "token-webhook", "mountPath": cluster_access.MOUNT, "readOnly": True}
        )
        api_server_args += cluster_access.api_server_args(spec.token_webhook)
    if spec.high_availability:
        control_plane_set["scheduling"] = {
            "affinity": anti_affinity(CONTROL_PLANE_LABEL, spec.name)
        }
        etcd_set["scheduling"] = {"affinity": anti_affinity(ETCD_LABEL, spec.name)}
    platform: dict[str, Any] = {
        "controlPlane": {
            "distro": {
                "k8s": {
                    "enabled": True,
                    "image": {"tag": kubernetes_version(spec)},
                    # The init container counts in the pod's limits as much as the API server.
                    "resources": copy.deepcopy(api_server),
                    "apiServer": {"extraArgs": api_server_args},
                }
            },
            "statefulSet": control_plane_set,
            "backingStore": {"etcd": {"deploy": {"enabled": True, "statefulSet": etcd_set}}},
            "coredns": {"deployment": {"resources": copy.deepcopy(COREDNS_RESOURCES)}},
            "proxy": {"extraSANs": [hostname]},
            # Exposure: one ingress host per cluster (the chart uses the value literally).
            "ingress": {"enabled": True, "host": hostname},
        },
        # The kubeconfig vCluster writes into vc-<cluster> names the external address.
        "exportKubeConfig": {"server": f"https://{host}"},
        # The tenant's namespace has the platform's quota and limit range (one per tenant,
        # not one per release: a namespace's quotas all apply to every pod in it).
        "policies": {"resourceQuota": {"enabled": False}, "limitRange": {"enabled": False}},
    }
    if spec.token_webhook is not None:
        # The review's groups bound to Kubernetes' roles inside the cluster.
        platform["experimental"] = {
            "deploy": {"vcluster": {"manifests": cluster_access.access_manifests_yaml()}}
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
