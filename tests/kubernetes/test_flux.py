"""Flux on the bed: source-controller and helm-controller install the real vCluster chart,
served by the bed's Helm repository, from a HelmRelease into the real API server, and uninstall
it when the HelmRelease goes. kwok plays the pods (no container runs), so the control plane and
etcd are ready as far as Kubernetes can tell, but vCluster itself never runs: nothing writes
its kubeconfig Secret ``vc-<name>``."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest
from lightkube import Client
from lightkube.core.resource import NamespacedResource
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apps_v1 import Deployment, StatefulSet
from lightkube.resources.core_v1 import (
    Namespace,
    PersistentVolume,
    PersistentVolumeClaim,
    Secret,
    Service,
)

from tests.kubernetes.conftest import Bed
from tests.kubernetes.polling import eventually, gone

pytestmark = pytest.mark.kubernetes

HelmRepository = create_namespaced_resource(
    "source.toolkit.fluxcd.io", "v1", "HelmRepository", "helmrepositories"
)
HelmRelease = create_namespaced_resource(
    "helm.toolkit.fluxcd.io", "v2", "HelmRelease", "helmreleases"
)

CHART_VERSION = "0.30.0"
# The upstream Kubernetes distribution, with etcd deployed as a StatefulSet of its own.
VALUES: dict[str, Any] = {
    "controlPlane": {
        "distro": {"k8s": {"enabled": True}},
        "backingStore": {"etcd": {"deploy": {"enabled": True}}},
    }
}
# Installing, the chart's objects are created and Helm waits for them to be ready.
INSTALL_TIMEOUT = 120


@pytest.fixture
def namespace(bed: Bed, kube: Client) -> Iterator[str]:
    name = f"flux-{uuid.uuid4().hex[:8]}"
    kube.create(Namespace(metadata=ObjectMeta(name=name)))
    kube.create(
        HelmRepository(
            metadata=ObjectMeta(name="vcluster"),
            spec={"url": bed.chart_repository, "interval": "10m"},
        ),
        namespace=name,
    )
    yield name
    kube.delete(Namespace, name)


def release(name: str, values: dict[str, Any]) -> Any:
    return HelmRelease(
        metadata=ObjectMeta(name=name),
        spec={
            "interval": "10m",
            "chart": {
                "spec": {
                    "chart": "vcluster",
                    "version": CHART_VERSION,
                    "sourceRef": {"kind": "HelmRepository", "name": "vcluster"},
                }
            },
            "values": values,
        },
    )


def condition(kube: Client, namespace: str, name: str, kind: str) -> dict[str, Any] | None:
    """The HelmRelease's condition of that type, once there is one."""
    found = kube.get(HelmRelease, name, namespace=namespace)
    status: dict[str, Any] = found.status if isinstance(found.status, dict) else {}
    conditions: list[dict[str, Any]] = status.get("conditions", [])
    return next((c for c in conditions if c["type"] == kind), None)


def settled(kube: Client, namespace: str, name: str) -> Callable[[], dict[str, Any] | None]:
    """The HelmRelease's Ready condition once Helm has acted (the Released condition says how)
    and it is True or False. Before, Ready is Unknown while in progress, or False with
    SourceNotReady until source-controller has made the chart's artifact."""

    def check() -> dict[str, Any] | None:
        if condition(kube, namespace, name, "Released") is None:
            return None
        ready = condition(kube, namespace, name, "Ready")
        return ready if ready is not None and ready["status"] != "Unknown" else None

    return check


def ready_replicas(
    kube: Client, kind: type[Deployment] | type[StatefulSet], namespace: str, name: str
) -> int | None:
    found = kube.get(kind, name, namespace=namespace)
    ready = found.status.readyReplicas if found.status is not None else None
    return ready or None


def labels_of(found: Deployment | StatefulSet | Service | PersistentVolumeClaim) -> dict[str, str]:
    assert found.metadata is not None
    return found.metadata.labels or {}


def test_a_helm_release_of_the_vcluster_chart_installs_it_and_its_deletion_uninstalls_it(
    kube: Client, namespace: str
) -> None:
    kube.create(release("dev", VALUES), namespace=namespace)

    ready = eventually(
        settled(kube, namespace, "dev"), "the HelmRelease Ready or failed", INSTALL_TIMEOUT
    )
    assert ready["status"] == "True", ready
    assert ready["reason"] == "InstallSucceeded"
    # The chart's own labels, and Flux's.
    chart = {"chart": f"vcluster-{CHART_VERSION}", "release": "dev", "heritage": "Helm"}
    flux = {"helm.toolkit.fluxcd.io/name": "dev", "helm.toolkit.fluxcd.io/namespace": namespace}

    # With etcd deployed, the control plane keeps no data of its own: a Deployment.
    assert (
        eventually(
            lambda: ready_replicas(kube, Deployment, namespace, "dev"), "the control plane ready"
        )
        == 1
    )
    control_plane = kube.get(Deployment, "dev", namespace=namespace)
    assert labels_of(control_plane).items() >= {"app": "vcluster", **chart, **flux}.items()
    service = kube.get(Service, "dev", namespace=namespace)
    assert labels_of(service).items() >= {"app": "vcluster", **chart}.items()
    assert service.spec is not None
    assert service.spec.selector == {
        "app": "vcluster",
        "release": "dev",
    }

    assert (
        eventually(lambda: ready_replicas(kube, StatefulSet, namespace, "dev-etcd"), "etcd ready")
        == 1
    )
    etcd = kube.get(StatefulSet, "dev-etcd", namespace=namespace)
    assert labels_of(etcd).items() >= {"app": "vcluster-etcd", **chart, **flux}.items()
    assert etcd.spec is not None
    assert etcd.spec.template.metadata is not None
    assert etcd.spec.template.metadata.labels == {"app": "vcluster-etcd", "release": "dev"}
    # The etcd replica's claim is bound through the bed's default StorageClass.
    claim = kube.get(PersistentVolumeClaim, "data-dev-etcd-0", namespace=namespace)
    assert labels_of(claim) == {"app": "vcluster-etcd", "release": "dev"}
    assert claim.spec is not None
    assert claim.spec.storageClassName == "standard"
    assert claim.status is not None
    assert claim.status.phase == "Bound"

    kube.delete(HelmRelease, "dev", namespace=namespace)

    # helm-controller's finalizer holds the HelmRelease until Helm has uninstalled the chart.
    eventually(gone(partial(kube.get, HelmRelease, "dev", namespace=namespace)), "the release gone")
    kinds: list[tuple[type[NamespacedResource], str]] = [
        (Deployment, "dev"),
        (StatefulSet, "dev-etcd"),
        (Service, "dev"),
        (Service, "dev-etcd"),
        (Secret, "vc-config-dev"),
        (Secret, "sh.helm.release.v1.dev.v1"),
    ]
    for kind, name in kinds:
        eventually(gone(partial(kube.get, kind, name, namespace=namespace)), f"{name} gone")
    # Claims of a StatefulSet outlive it (the chart retains them): they go when deleted, and
    # their volumes with them.
    assert labels_of(kube.get(PersistentVolumeClaim, "data-dev-etcd-0", namespace=namespace))
    volume = claim.spec.volumeName
    assert volume is not None
    kube.delete(PersistentVolumeClaim, "data-dev-etcd-0", namespace=namespace)
    eventually(gone(partial(kube.get, PersistentVolume, volume)), f"the volume {volume} gone")


def test_a_helm_release_whose_chart_does_not_render_fails_with_the_charts_message(
    kube: Client, namespace: str
) -> None:
    both_distros = {
        "controlPlane": {"distro": {"k8s": {"enabled": True}, "k3s": {"enabled": True}}}
    }
    kube.create(release("dev", both_distros), namespace=namespace)

    ready = eventually(settled(kube, namespace, "dev"), "the HelmRelease failed", INSTALL_TIMEOUT)

    assert ready["status"] == "False"
    assert ready["reason"] == "InstallFailed"
    assert "you can only enable one distro at the same time" in ready["message"]
    released = condition(kube, namespace, "dev", "Released")
    assert released is not None
    assert released["reason"] == "InstallFailed"
