"""Clusters through the HTTP API with TENANTPLANE_ORCHESTRATOR=kubernetes on the bed: the
real API server and controllers, Flux installing the real vCluster chart from the bed's Helm
repository, kwok playing the pods. vCluster itself cannot run without containers: a stand-in
writes what it writes at run time, its kubeconfig Secret, pointing at the bed's stand-in
tenant cluster (a real API server)."""

from __future__ import annotations

import asyncio
import base64
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import ApiError, Client
from lightkube.models.core_v1 import Container, PodSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Namespace, Pod, ResourceQuota
from lightkube.types import PatchType

from tenantplane.db.engine import Database
from tenantplane.providers.kube import HelmRelease
from tests.cluster.polling import create_cluster, gone, poll, status_matches
from tests.factories import Factory
from tests.http_client import bearer
from tests.kubernetes.admission import held, no_new_pods, pod_short
from tests.kubernetes.conftest import Bed
from tests.kubernetes.vcluster_stand_in import VClusterStandIn, as_manifest
from tests.tenant.conftest import Operated, operated

pytestmark = [
    pytest.mark.kubernetes,
    # PostgreSQL, as in production; the bed is what is under test here, not the database.
    pytest.mark.parametrize("database_url", ["postgresql"], indirect=True),
]

# Helm waits for the chart's workloads; kwok makes pods ready within seconds.
DEADLINE = 240.0


def tenant_cluster_port(bed: Bed) -> str:
    config = yaml.safe_load(bed.tenant_cluster_kubeconfig.read_text())
    return str(config["clusters"][0]["cluster"]["server"]).rsplit(":", 1)[1]


@pytest.fixture
async def platform(
    database: Database, database_url: str, tmp_path: Path, bed: Bed, stand_in: VClusterStandIn
) -> AsyncIterator[Operated]:
    async for value in operated(
        database_url,
        tmp_path,
        orchestrator="kubernetes",
        cluster_token_webhook_url="https://tenantplane.example.net",
        kubeconfig=bed.kubeconfig,
        vcluster_chart_repository=bed.chart_repository,
        # Every cluster's ingress host is "localhost", its kubeconfig's server the stand-in
        # tenant cluster: the endpoint the API reports is one a client can reach.
        cluster_host_template=f"localhost:{tenant_cluster_port(bed)}",
        kubernetes_poll_seconds=0.5,
        cluster_retry_seconds=0.5,
        cluster_resync_seconds=2.0,
    ):
        yield value


async def wait_for(platform: Operated, path: str, key: str, what: str, **status: Any) -> Any:
    response = await poll(
        platform.client,
        path,
        bearer(key),
        status_matches(**status),
        what,
        deadline=DEADLINE,
        interval=0.5,
    )
    return response.json()


def running_on(prefix: str) -> Any:
    def check(response: Any) -> bool:
        status = response.json().get("status", {}) if response.status_code == 200 else {}
        return status.get("phase") == "Running" and str(
            status.get("kubernetesVersion", "")
        ).startswith(prefix)

    return check


def not_ready(kube: Client, pod: str, namespace: str) -> None:
    """The pod's Ready condition False, written to its status as a kubelet writes it."""
    current = kube.get(Pod, pod, namespace=namespace)
    assert current.status is not None
    conditions = [
        {"type": c.type, "status": "False" if c.type in ("Ready", "ContainersReady") else c.status}
        for c in current.status.conditions or []
    ]
    kube.patch(
        Pod.Status,
        pod,
        {"status": {"conditions": conditions}},
        namespace=namespace,
        patch_type=PatchType.MERGE,
    )


def pods_of(kube: Client, namespace: str, **labels: str) -> list[Pod]:
    return list(kube.list(Pod, namespace=namespace, labels=dict(labels.items()) or None))


async def test_clusters_up_to_the_plan_pool_run_upgrade_resize_and_go(
    platform: Operated,
    factory: Factory,
    kube: Client,
    bed: Bed,
    stand_in: VClusterStandIn,
    tmp_path: Path,
) -> None:
    tenant = await factory.tenant()  # starter: 8 cpu, 16Gi, 200Gi
    namespace = f"tp-{tenant.name}"
    key = tenant.admin_key
    # Exactly the plan's pool between them, HA included: the API admits both...
    await create_cluster(
        platform.client,
        tenant.path,
        key,
        "solo",
        resources={"cpu": "2", "memory": "4Gi", "storage": "50Gi"},
    )
    await create_cluster(
        platform.client,
        tenant.path,
        key,
        "trio",
        highAvailability=True,
        resources={"cpu": "6", "memory": "12Gi", "storage": "150Gi"},
    )
    # ...and the namespace's quota admits every pod they run.
    trio = await wait_for(
        platform, f"{tenant.path}/clusters/trio", key, "trio Running, HA", haPhase="ha-healthy"
    )
    solo = await wait_for(platform, f"{tenant.path}/clusters/solo", key, "solo", phase="Running")
    status = trio["status"]
    assert (status["haReplicasReady"], status["haEtcdReplicasReady"]) == (3, 3)
    assert status["haConfigured"] is True
    assert status["haEnabledAt"]
    pods = pods_of(kube, namespace)
    assert len(pods) == 1 + 1 + 3 + 3
    assert all(pod.status is not None and pod.status.phase == "Running" for pod in pods)
    quota = kube.get(ResourceQuota, "plan", namespace=namespace)
    assert quota.status is not None
    assert quota.status.used is not None
    assert quota.status.hard == {
        "limits.cpu": "8",
        "limits.memory": "16Gi",
        "requests.storage": "200Gi",
    }
    # A tenant's workload as vCluster syncs it into the namespace, naming no resources: the
    # namespace's LimitRange gives it limits, the quota admits it, kwok runs it.
    workload = Pod(
        metadata=ObjectMeta(name="synced-workload", namespace=namespace),
        spec=PodSpec(containers=[Container(name="app", image="registry.invalid/app:1")]),
    )
    kube.create(workload)
    admitted = kube.get(Pod, "synced-workload", namespace=namespace)
    assert admitted.spec is not None
    limits = admitted.spec.containers[0].resources
    assert limits is not None
    assert limits.limits == {"cpu": "1", "memory": "512Mi"}
    kube.delete(Pod, "synced-workload", namespace=namespace, grace_period=0)

    # HA: each replica on a node of its own, required by the pods' anti-affinity.
    for app in ("vcluster", "vcluster-etcd"):
        replicas = pods_of(kube, namespace, app=app, release="trio")
        assert len({pod.spec.nodeName for pod in replicas if pod.spec}) == 3, app
        for pod in replicas:
            assert pod.spec is not None
            assert pod.spec.affinity is not None
            assert pod.spec.affinity.podAntiAffinity is not None
            [term] = (
                pod.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution
                or []
            )
            assert term.topologyKey == "kubernetes.io/hostname"

    # A control-plane pod deleted and not yet replaced (its replacement refused here, as a
    # full node or quota would): degraded, still Running (one pod fewer is no upgrade; the
    # Deployment reports fewer replicas, all updated); healthy once the pod is back.
    [_, second, _] = pods_of(kube, namespace, app="vcluster", release="trio")
    assert second.metadata is not None
    assert second.metadata.name is not None
    async with no_new_pods(kube, namespace, app="vcluster", release="trio"):
        kube.delete(Pod, second.metadata.name, namespace=namespace, grace_period=0)
        await held(kube, Deployment, "trio", namespace, pod_short)
        short = await wait_for(
            platform, f"{tenant.path}/clusters/trio", key, "trio a pod short", haPhase="ha-degraded"
        )
        assert short["status"]["haReplicasReady"] == 2
        assert short["status"]["phase"] == "Running", short["status"]
    await wait_for(
        platform, f"{tenant.path}/clusters/trio", key, "trio replaced", haPhase="ha-healthy"
    )

    # A control-plane pod reported NotReady (as kwok, the kubelet here, would report it):
    # degraded; the pod replaced by its Deployment and made ready by kwok: healthy again.
    [first, *_] = pods_of(kube, namespace, app="vcluster", release="trio")
    assert first.metadata is not None
    assert first.metadata.name is not None
    not_ready(kube, first.metadata.name, namespace)
    degraded = await wait_for(
        platform, f"{tenant.path}/clusters/trio", key, "trio degraded", haPhase="ha-degraded"
    )
    assert degraded["status"]["haReplicasReady"] == 2
    kube.delete(Pod, first.metadata.name, namespace=namespace)
    await wait_for(
        platform, f"{tenant.path}/clusters/trio", key, "trio healthy again", haPhase="ha-healthy"
    )

    # The endpoint and CA are what the cluster serves: a client reaches it with them.
    details = await platform.client.get(
        f"{tenant.path}/clusters/solo/connection-details", headers=bearer(key)
    )
    assert details.status_code == 200, details.text
    endpoint, ca = details.json()["endpoint"], details.json()["certificateAuthority"]
    assert solo["status"]["endpoint"] == endpoint
    assert endpoint == f"https://localhost:{tenant_cluster_port(bed)}"
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(base64.b64decode(ca))
    # With the credentials of the kubeconfig vCluster wrote (an admin's token here).
    token = stand_in.user["token"]
    version = await asyncio.to_thread(
        subprocess.run,
        [
            *("kubectl", "--server", endpoint, "--certificate-authority", str(ca_file)),
            *("--token", token, "get", "--raw", "/version"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert version.returncode == 0, version.stderr
    assert '"gitVersion"' in version.stdout

    # One minor version up, then a resize: each a new release, rolled by the real controllers.
    path = f"{tenant.path}/clusters/trio"
    current = await platform.client.get(path, headers=bearer(key))
    upgraded = await platform.client.patch(
        path, json={"version": "1.34"}, headers={**bearer(key), "If-Match": current.headers["ETag"]}
    )
    assert upgraded.status_code == 200, upgraded.text
    await poll(
        platform.client,
        path,
        bearer(key),
        running_on("v1.34."),
        "upgraded to 1.34",
        deadline=DEADLINE,
        interval=0.5,
    )
    release = as_manifest(kube.get(HelmRelease, "trio", namespace=namespace))
    assert release["spec"]["values"]["controlPlane"]["distro"]["k8s"]["image"]["tag"].startswith(
        "v1.34."
    )

    solo_path = f"{tenant.path}/clusters/solo"
    current = await platform.client.get(solo_path, headers=bearer(key))
    resized = await platform.client.patch(
        solo_path,
        json={"resources": {"cpu": "1", "memory": "2Gi"}},
        headers={**bearer(key), "If-Match": current.headers["ETag"]},
    )
    assert resized.status_code == 200, resized.text

    def syncer_cpu() -> str:
        deployment = kube.get(Deployment, "solo", namespace=namespace)
        assert deployment.spec is not None
        assert deployment.spec.template.spec is not None
        [syncer] = [c for c in deployment.spec.template.spec.containers if c.name == "syncer"]
        assert syncer.resources is not None
        assert syncer.resources.limits is not None
        return str(syncer.resources.limits["cpu"])

    # Released by Flux with the new share (3/8 of 1 cpu), rolled, Running again.
    await poll_until(lambda: syncer_cpu() == "375m", "the resized control plane released")
    await wait_for(platform, solo_path, key, "resized", phase="Running")

    # Deleted, nothing is left in the host: the namespace goes with the last cluster.
    for name in ("solo", "trio"):
        deleted = await platform.client.delete(
            f"{tenant.path}/clusters/{name}", headers=bearer(key)
        )
        assert deleted.status_code in (200, 202), deleted.text
    for name in ("solo", "trio"):
        await poll(
            platform.client,
            f"{tenant.path}/clusters/{name}",
            bearer(key),
            gone,
            f"{name} gone",
            deadline=DEADLINE,
            interval=0.5,
        )

    def namespace_gone() -> bool:
        try:
            kube.get(Namespace, namespace)
        except ApiError as error:
            return error.status.code == 404
        return False

    await poll_until(namespace_gone, "the tenant's namespace gone")


async def poll_until(check: Any, what: str) -> None:
    loop = asyncio.get_running_loop()
    give_up = loop.time() + DEADLINE
    while not check():
        if loop.time() > give_up:
            pytest.fail(f"not within {DEADLINE:.0f}s: {what}")
        await asyncio.sleep(0.5)
