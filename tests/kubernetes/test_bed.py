"""The bed is real Kubernetes: namespaces, deployments and quotas behave as the real API
server, controllers and scheduler make them behave (kwok plays only the kubelets)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from lightkube import ApiError, Client
from lightkube.models.apps_v1 import DeploymentSpec
from lightkube.models.core_v1 import (
    Affinity,
    Container,
    PodAffinityTerm,
    PodAntiAffinity,
    PodSpec,
    PodTemplateSpec,
    ResourceQuotaSpec,
    ResourceRequirements,
)
from lightkube.models.meta_v1 import LabelSelector, ObjectMeta
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import (
    ConfigMap,
    Namespace,
    Pod,
    ResourceQuota,
    ServiceAccount,
)

from tests.kubernetes.polling import eventually

pytestmark = pytest.mark.kubernetes

# No container runs (kwok reports pods Running without one), so no image is ever pulled.
IMAGE = "registry.invalid/never-pulled:1"
ZONE = "topology.kubernetes.io/zone"


@pytest.fixture
def namespace(kube: Client) -> Iterator[str]:
    name = f"bed-{uuid.uuid4().hex[:8]}"
    kube.create(Namespace(metadata=ObjectMeta(name=name)))
    yield name
    kube.delete(Namespace, name)


def container(resources: ResourceRequirements | None = None) -> Container:
    return Container(name="main", image=IMAGE, resources=resources)


def deployment(name: str, replicas: int, *, spread_over_zones: bool = False) -> Deployment:
    labels = {"app": name}
    affinity = None
    if spread_over_zones:
        # What an HA control plane needs: no two replicas in one zone.
        affinity = Affinity(
            podAntiAffinity=PodAntiAffinity(
                requiredDuringSchedulingIgnoredDuringExecution=[
                    PodAffinityTerm(
                        topologyKey=ZONE, labelSelector=LabelSelector(matchLabels=labels)
                    )
                ]
            )
        )
    return Deployment(
        metadata=ObjectMeta(name=name),
        spec=DeploymentSpec(
            replicas=replicas,
            selector=LabelSelector(matchLabels=labels),
            template=PodTemplateSpec(
                metadata=ObjectMeta(labels=labels),
                spec=PodSpec(containers=[container()], affinity=affinity),
            ),
        ),
    )


def ready_replicas(kube: Client, namespace: str, name: str, replicas: int) -> Deployment | None:
    found = kube.get(Deployment, name, namespace=namespace)
    status = found.status
    return found if status is not None and status.readyReplicas == replicas else None


def is_ready(pod: Pod) -> bool:
    conditions = pod.status.conditions if pod.status is not None else None
    return any(c.type == "Ready" and c.status == "True" for c in conditions or [])


def gone(kube: Client, name: str) -> bool | None:
    try:
        kube.get(Namespace, name)
    except ApiError as error:
        if error.status.code == 404:
            return True
        raise
    return None


def quota_enforced(kube: Client, namespace: str, name: str) -> ResourceQuota | None:
    quota = kube.get(ResourceQuota, name, namespace=namespace)
    return quota if quota.status is not None and quota.status.hard else None


def test_a_new_namespace_is_active_with_its_service_account_and_root_ca(
    kube: Client, namespace: str
) -> None:
    created = kube.get(Namespace, namespace)
    assert created.status is not None
    assert created.status.phase == "Active"
    # Written by the controller manager's service-account and root-CA publisher controllers.
    eventually(
        lambda: kube.get(ServiceAccount, "default", namespace=namespace),
        "the namespace's default service account",
    )
    eventually(
        lambda: kube.get(ConfigMap, "kube-root-ca.crt", namespace=namespace),
        "the namespace's kube-root-ca.crt",
    )


def test_a_deployment_gets_its_pods_scheduled_onto_kwok_nodes_and_ready(
    kube: Client, namespace: str
) -> None:
    kube.create(deployment("web", 2, spread_over_zones=True), namespace=namespace)

    eventually(lambda: ready_replicas(kube, namespace, "web", 2), "2 ready replicas of web")

    pods = list(kube.list(Pod, namespace=namespace, labels={"app": "web"}))
    assert len(pods) == 2
    nodes = [pod.spec.nodeName for pod in pods if pod.spec is not None]
    assert all(node is not None and node.startswith("kwok-node-") for node in nodes), nodes
    assert len(set(nodes)) == 2, f"anti-affinity by zone put both replicas on {nodes}"
    assert all(pod.status is not None and pod.status.phase == "Running" for pod in pods)
    assert all(is_ready(pod) for pod in pods)
    # Created by the ReplicaSet the deployment controller made, not by anyone else.
    owners = [
        ref.kind for pod in pods if pod.metadata for ref in pod.metadata.ownerReferences or []
    ]
    assert owners == ["ReplicaSet", "ReplicaSet"]


def test_a_quota_on_limits_refuses_a_pod_without_limits(kube: Client, namespace: str) -> None:
    """Issue 34's first finding at its root: under a ResourceQuota on ``limits.cpu`` and
    ``limits.memory``, a pod with requests only (like the vCluster chart's etcd) is refused
    by the API server's admission."""
    kube.create(
        ResourceQuota(
            metadata=ObjectMeta(name="plan"),
            spec=ResourceQuotaSpec(hard={"limits.cpu": "4", "limits.memory": "8Gi"}),
        ),
        namespace=namespace,
    )
    # Admission enforces the limits the quota controller has copied into the quota's status:
    # until it has, pods are admitted unchecked (the admission plugin reads status.hard).
    eventually(lambda: quota_enforced(kube, namespace, "plan"), "the quota's status.hard")
    requests_only = ResourceRequirements(requests={"cpu": "100m", "memory": "128Mi"})

    with pytest.raises(ApiError) as refused:
        kube.create(
            Pod(
                metadata=ObjectMeta(name="etcd-0"),
                spec=PodSpec(containers=[container(requests_only)]),
            ),
            namespace=namespace,
        )

    assert refused.value.status.code == 403
    assert "must specify limits.cpu" in (refused.value.status.message or "")
    limited = ResourceRequirements(
        requests={"cpu": "100m", "memory": "128Mi"}, limits={"cpu": "1", "memory": "1Gi"}
    )
    kube.create(
        Pod(metadata=ObjectMeta(name="limited"), spec=PodSpec(containers=[container(limited)])),
        namespace=namespace,
    )


def test_deleting_a_namespace_removes_it_and_what_it_holds(kube: Client) -> None:
    name = f"bed-{uuid.uuid4().hex[:8]}"
    kube.create(Namespace(metadata=ObjectMeta(name=name)))
    kube.create(ConfigMap(metadata=ObjectMeta(name="settings"), data={"a": "1"}), namespace=name)
    kube.create(deployment("web", 1), namespace=name)
    eventually(lambda: ready_replicas(kube, name, "web", 1), "1 ready replica of web")

    kube.delete(Namespace, name)

    # The namespace controller empties it (kwok lets the pods go), then removes it.
    eventually(lambda: gone(kube, name), f"namespace {name} gone")
