"""The fake host cluster (tests/fakes/kubernetes.py) stays for what the real components cannot
do on demand (429s, stalls, one replica per step); everything the orchestrator reads from it is
checked here against what the real API server, Flux and the vCluster chart give on the bed for
the same cluster: the same objects, kinds, labels and Flux status, and the same observation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from tenantplane.providers.kube import Kube, client_for, condition, load_kubeconfig
from tenantplane.providers.orchestrator import ClusterSpec, Observation, Stage
from tenantplane.providers.orchestrator.kubernetes import KubernetesOrchestrator
from tests.fakes.kubernetes_fixtures import HostCluster
from tests.kubernetes.conftest import Bed
from tests.kubernetes.looks import chart, cluster_spec, deleted, settled
from tests.kubernetes.vcluster_stand_in import VClusterStandIn

pytestmark = pytest.mark.kubernetes


@pytest.fixture
async def fake_host(host_cluster: HostCluster) -> AsyncIterator[Kube]:
    kube = Kube(client_for(load_kubeconfig(host_cluster.kubeconfig, "host"), 10.0))
    yield kube
    await kube.aclose()


async def shape(kube: Kube, cluster: ClusterSpec, observed: Observation) -> dict[str, Any]:
    """What the orchestrator reads, and what it selects when it deletes."""
    namespace = f"tp-{cluster.tenant}"
    release = await kube.get("HelmRelease", cluster.name, namespace)
    control_plane = await kube.get("Deployment", cluster.name, namespace)
    etcd = await kube.get("StatefulSet", f"{cluster.name}-etcd", namespace)
    assert release is not None
    assert control_plane is not None
    assert etcd is not None
    claims = await kube.list("PersistentVolumeClaim", namespace, {"release": cluster.name})
    status = release["status"]
    return {
        "release": {
            "observed current": status.get("observedGeneration")
            == release["metadata"]["generation"],
            "Ready": (condition(release, "Ready")["status"], condition(release, "Ready")["reason"]),
            "Released": condition(release, "Released")["status"],
            "Stalled": condition(release, "Stalled").get("status"),
            "history": [snapshot["status"] for snapshot in status["history"]],
        },
        "control plane": {
            "selector": control_plane["spec"]["selector"]["matchLabels"],
            "replicas": (
                control_plane["spec"]["replicas"],
                control_plane["status"]["readyReplicas"],
            ),
            "current": control_plane["status"]["observedGeneration"]
            == control_plane["metadata"]["generation"],
            "updated": control_plane["status"]["updatedReplicas"],
        },
        "etcd": {
            "selector": etcd["spec"]["selector"]["matchLabels"],
            "replicas": (etcd["spec"]["replicas"], etcd["status"]["readyReplicas"]),
            "revision current": etcd["status"]["currentRevision"]
            == etcd["status"]["updateRevision"],
        },
        "claims": sorted(
            (claim["metadata"]["name"], claim["metadata"]["labels"]["app"]) for claim in claims
        ),
        "observation": replace(observed, observed_at=0.0, certificate_authority=""),
    }


async def test_the_fake_gives_what_the_real_components_give(
    bed: Bed,
    host: Kube,
    stand_in: VClusterStandIn,
    host_cluster: HostCluster,
    fake_host: Kube,
) -> None:
    cluster = cluster_spec("parity", high_availability=True, cpu="3", memory="6Gi", storage="30Gi")
    real = KubernetesOrchestrator(host, chart(bed.chart_repository))
    fake = KubernetesOrchestrator(fake_host, chart("https://charts.example.test"))

    async def step() -> None:
        host_cluster.controllers.step()

    on_the_bed = await settled(real, cluster)
    on_the_fake = await settled(fake, cluster, step)
    assert on_the_bed.stage == Stage.ready
    try:
        seen_on_the_bed = await shape(host, cluster, on_the_bed)
        print(seen_on_the_bed)  # the run's record of what the real components gave
        assert await shape(fake_host, cluster, on_the_fake) == seen_on_the_bed
    finally:
        await deleted(real, cluster)
