"""The Kubernetes orchestrator through lightkube against the fake API server, whose
controllers play Flux and vCluster one step at a time."""

from __future__ import annotations

import base64
import itertools
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml
from lightkube import ApiError
from pydantic import ValidationError

from tenantplane.config import Settings
from tenantplane.providers.kube import Kube, client_for, load_kubeconfig
from tenantplane.providers.orchestrator import ClusterSpec, Observation, Stage
from tenantplane.providers.orchestrator.kubernetes import (
    ChartSettings,
    KubernetesOrchestrator,
    observation_of,
)
from tenantplane.reconcile.fence import UNFENCED
from tests.fakes.kubernetes_fixtures import HostCluster

CHART = ChartSettings(
    repository="https://charts.loft.sh",
    version="0.30.0",
    host_template="{cluster}.{tenant}.clusters.example.net",
    extra_values={"sync": {"toHost": {"ingresses": {"enabled": True}}}},
)
POOL = {"cpu": "8", "memory": "16Gi", "storage": "200Gi"}
# Steps of the fake's controllers an observation may take to settle, at most.
MAX_STEPS = 40


def spec(name: str = "dev", high_availability: bool = True) -> ClusterSpec:
    return ClusterSpec(
        uid=uuid.uuid4().hex,
        name=name,
        tenant="acme",
        version="1.33",
        patch=5,
        high_availability=high_availability,
        cpu="2",
        memory="4Gi",
        storage="20Gi",
        pool=POOL,
    )


# A loopback call's budget: generous, so that a pause of this process (a full garbage
# collection of a test run's heap, a loaded machine) fails no test that is not about it.
CALL_TIMEOUT_SECONDS = 10.0
# The budget of the test about timeouts, and a stall of the fake longer than it.
SHORT_TIMEOUT_SECONDS = 0.5


@asynccontextmanager
async def orchestrator_of(
    host_cluster: HostCluster, timeout_seconds: float
) -> AsyncIterator[KubernetesOrchestrator]:
    kube = Kube(client_for(load_kubeconfig(host_cluster.kubeconfig, "host"), timeout_seconds))
    try:
        yield KubernetesOrchestrator(kube, CHART)
    finally:
        await kube.aclose()


@pytest.fixture
async def orchestrator(host_cluster: HostCluster) -> AsyncIterator[KubernetesOrchestrator]:
    async with orchestrator_of(host_cluster, CALL_TIMEOUT_SECONDS) as orchestrator:
        yield orchestrator


async def converge(
    orchestrator: KubernetesOrchestrator, host: HostCluster, cluster: ClusterSpec
) -> list[Observation]:
    """Apply, one controller step, apply … until settled: every observation on the way."""
    seen = [await orchestrator.apply(cluster, UNFENCED)]
    for _ in range(MAX_STEPS):
        if seen[-1].settled:
            return seen
        host.controllers.step()
        seen.append(await orchestrator.apply(cluster, UNFENCED))
    pytest.fail(f"did not settle: {seen[-1]}")


async def test_create_lays_out_the_tenant_namespace_and_the_release(
    orchestrator: KubernetesOrchestrator,
    host_cluster: HostCluster,
) -> None:
    cluster = spec()
    first = await orchestrator.apply(cluster, UNFENCED)
    assert first.stage == Stage.creating
    api = host_cluster.api
    namespace = api.get("Namespace", "tp-acme")
    assert namespace is not None
    assert namespace["metadata"]["labels"]["tenantplane.io/tenant"] == "acme"
    quota = api.get("ResourceQuota", "plan", "tp-acme")
    assert quota is not None
    assert quota["spec"]["hard"] == {
        "limits.cpu": "8",
        "limits.memory": "16Gi",
        "requests.storage": "200Gi",
    }
    policy = api.get("NetworkPolicy", "tenant-isolation", "tp-acme")
    assert policy is not None
    assert policy["spec"]["ingress"] == [{"from": [{"podSelector": {}}]}]
    # The API servers are reached from outside the namespace (ingress, worker, vault).
    api_policy = api.get("NetworkPolicy", "control-plane-api", "tp-acme")
    assert api_policy is not None
    assert api_policy["spec"]["podSelector"] == {"matchLabels": {"app": "vcluster"}}
    assert api_policy["spec"]["ingress"] == [{"ports": [{"protocol": "TCP", "port": 8443}]}]
    # Containers without limits (synced workloads) get defaults: the quota admits them.
    limits = api.get("LimitRange", "workload-defaults", "tp-acme")
    assert limits is not None
    assert limits["spec"]["limits"][0]["default"] == {"cpu": "1", "memory": "512Mi"}
    release = api.get("HelmRelease", "dev", "tp-acme")
    assert release is not None
    assert release["metadata"]["labels"]["tenantplane.io/cluster-uid"] == cluster.uid
    chart = release["spec"]["chart"]["spec"]
    assert (chart["chart"], chart["version"]) == ("vcluster", "0.30.0")
    assert release["spec"]["timeout"] == "10m"  # Helm's wait for the workloads
    assert release["spec"]["install"] == {"remediation": {"retries": 3}}
    values = release["spec"]["values"]
    plane = values["controlPlane"]
    assert plane["statefulSet"]["highAvailability"]["replicas"] == 3
    etcd = plane["backingStore"]["etcd"]["deploy"]
    assert etcd["enabled"] is True
    assert etcd["statefulSet"]["highAvailability"] == {"replicas": 3}
    assert plane["distro"]["k8s"]["image"]["tag"] == "v1.33.5"
    # The cluster's 2 cpu / 4Gi: 3/8 to the API servers and 1/8 to etcd, over 3 replicas
    # each, requests equal to limits; half of its 20Gi to etcd's volumes.
    api_server = {"cpu": "250m", "memory": "512Mi"}
    assert plane["statefulSet"]["resources"] == {"limits": api_server, "requests": api_server}
    assert plane["distro"]["k8s"]["resources"] == {"limits": api_server, "requests": api_server}
    etcd_member = {"cpu": "83m", "memory": "170Mi"}
    assert etcd["statefulSet"]["resources"] == {"limits": etcd_member, "requests": etcd_member}
    assert etcd["statefulSet"]["persistence"]["volumeClaim"]["size"] == "3413Mi"
    assert plane["statefulSet"]["persistence"]["volumeClaim"] == {"enabled": False}
    # HA: replicas on distinct nodes.
    for workload, app in (
        (plane["statefulSet"], "vcluster"),
        (etcd["statefulSet"], "vcluster-etcd"),
    ):
        [term] = workload["scheduling"]["affinity"]["podAntiAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        assert term == {
            "labelSelector": {"matchLabels": {"app": app, "release": "dev"}},
            "topologyKey": "kubernetes.io/hostname",
        }
    # Exposed through an ingress host of its own, named in the kubeconfig vCluster writes.
    assert plane["proxy"]["extraSANs"] == ["dev.acme.clusters.example.net"]
    assert plane["ingress"] == {"enabled": True, "host": "dev.acme.clusters.example.net"}
    assert values["exportKubeConfig"] == {"server": "https://dev.acme.clusters.example.net"}
    assert values["policies"] == {
        "resourceQuota": {"enabled": False},
        "limitRange": {"enabled": False},
    }
    assert values["sync"] == {"toHost": {"ingresses": {"enabled": True}}}  # extra values
    # Encryption at rest: the API server reads a key made for this cluster.
    [argument] = plane["distro"]["k8s"]["apiServer"]["extraArgs"]
    assert argument.startswith("--encryption-provider-config=")
    secret = api.get("Secret", "dev-encryption", "tp-acme")
    assert secret is not None
    config = base64.b64decode(secret["data"]["config.yaml"]).decode()
    assert "secretbox" in config
    assert "EncryptionConfiguration" in config


async def test_applying_again_writes_nothing(
    orchestrator: KubernetesOrchestrator,
    host_cluster: HostCluster,
) -> None:
    cluster = spec()
    await orchestrator.apply(cluster, UNFENCED)
    revision = host_cluster.api.revision
    key = host_cluster.api.get("Secret", "dev-encryption", "tp-acme")
    await orchestrator.apply(cluster, UNFENCED)
    assert host_cluster.api.revision == revision
    assert host_cluster.api.get("Secret", "dev-encryption", "tp-acme") == key


async def test_ha_replicas_become_ready_one_at_a_time(
    orchestrator: KubernetesOrchestrator,
    host_cluster: HostCluster,
) -> None:
    seen = await converge(orchestrator, host_cluster, spec())
    counts = [(o.control_plane.ready, o.etcd.ready) for o in seen]
    steps = [(b[0] - a[0]) + (b[1] - a[1]) for a, b in itertools.pairwise(counts)]
    assert set(steps) <= {0, 1}  # never two replicas in one step
    assert counts[-1] == (3, 3)
    # The API serves (Running) from the first control-plane replica with etcd quorum.
    first_ready = next(o for o in seen if o.stage == Stage.ready)
    assert (first_ready.control_plane.ready, first_ready.etcd.ready) == (1, 2)
    assert all(o.stage == Stage.creating for o in seen[: seen.index(first_ready)])
    last = seen[-1]
    assert last.stage == Stage.ready
    assert last.kubernetes_version == "v1.33.5"
    assert last.version == "1.33"
    assert last.endpoint == "https://dev.acme.clusters.example.net"
    ca = base64.b64decode(last.certificate_authority).decode()
    assert ca.startswith("-----BEGIN CERTIFICATE-----")


async def test_degraded_replicas_are_seen_and_recover(
    orchestrator: KubernetesOrchestrator,
    host_cluster: HostCluster,
) -> None:
    cluster = spec()
    await converge(orchestrator, host_cluster, cluster)
    host_cluster.controllers.degrade("tp-acme", "dev", 2)
    degraded = await orchestrator.apply(cluster, UNFENCED)
    assert degraded.stage == Stage.ready
    assert (degraded.control_plane.ready, degraded.etcd.ready) == (1, 3)
    assert degraded.api_available
    assert not degraded.settled
    host_cluster.controllers.degrade("tp-acme", "dev-etcd", 2)
    unavailable = await orchestrator.apply(cluster, UNFENCED)
    assert not unavailable.api_available  # etcd lost quorum
    host_cluster.controllers.recover("tp-acme", "dev")
    host_cluster.controllers.recover("tp-acme", "dev-etcd")
    seen = await converge(orchestrator, host_cluster, cluster)
    assert (seen[-1].control_plane.ready, seen[-1].etcd.ready) == (3, 3)
    assert len(seen) >= 4  # one replica per step


async def test_upgrade_rolls_the_control_plane_to_the_new_version(
    orchestrator: KubernetesOrchestrator,
    host_cluster: HostCluster,
) -> None:
    cluster = spec()
    await converge(orchestrator, host_cluster, cluster)
    upgraded = replace(cluster, version="1.34", patch=1)
    seen = await converge(orchestrator, host_cluster, upgraded)
    assert seen[0].stage == Stage.upgrading
    assert seen[0].kubernetes_version == ""  # not known while it rolls
    rolling = [o for o in seen if o.stage == Stage.upgrading]
    assert min(o.control_plane.ready for o in rolling) == 2  # one replica at a time
    assert min(o.etcd.ready for o in rolling) == 3  # etcd untouched
    assert seen[-1].stage == Stage.ready
    assert seen[-1].kubernetes_version == "v1.34.1"
    release = host_cluster.api.get("HelmRelease", "dev", "tp-acme")
    assert release is not None
    tag = release["spec"]["values"]["controlPlane"]["distro"]["k8s"]["image"]["tag"]
    assert tag == "v1.34.1"


async def test_a_failed_install_is_retried_then_reported_once_flux_stalls(
    orchestrator: KubernetesOrchestrator,
    host_cluster: HostCluster,
) -> None:
    cluster = spec()
    host_cluster.controllers.fail("tp-acme", "dev", "chart vcluster 0.30.0 not found")
    seen = [await orchestrator.apply(cluster, UNFENCED)]
    for _ in range(4):  # the first attempt and the release's 3 remediation retries
        host_cluster.controllers.step()
        seen.append(await orchestrator.apply(cluster, UNFENCED))
    # While Flux retries, the cluster is still being created, Flux's reason in the message.
    assert [o.stage for o in seen[:-1]] == [Stage.creating] * 4
    assert "InstallFailed" in seen[1].message
    failed = seen[-1]
    assert failed.stage == Stage.failed
    assert "RetriesExceeded" in failed.message
    # Flux does not try a stalled release again by itself...
    host_cluster.controllers.heal("tp-acme", "dev")
    host_cluster.controllers.run(3)
    assert (await orchestrator.apply(cluster, UNFENCED)).stage == Stage.failed
    # ...until reset, as docs/kubernetes.md tells the operator to (flux reconcile --reset).
    release = host_cluster.api.get("HelmRelease", "dev", "tp-acme")
    assert release is not None
    token = "2026-11-28T00:00:00Z"
    release["metadata"]["annotations"] = {
        "reconcile.fluxcd.io/requestedAt": token,
        "reconcile.fluxcd.io/resetAt": token,
    }
    host_cluster.api.put(release)
    recovered = await converge(orchestrator, host_cluster, cluster)
    assert recovered[-1].stage == Stage.ready


async def test_a_running_cluster_whose_chart_source_is_lost_stays_running(
    orchestrator: KubernetesOrchestrator,
    host_cluster: HostCluster,
) -> None:
    """helm-controller keeps ``observedGeneration`` when the source goes: not a failure."""
    cluster = spec()
    await converge(orchestrator, host_cluster, cluster)
    host_cluster.controllers.lose_source("tp-acme", "dev")
    host_cluster.controllers.step()
    transient = await orchestrator.apply(cluster, UNFENCED)
    assert transient.stage == Stage.ready
    assert not transient.settled
    assert "SourceNotReady" in transient.message
    host_cluster.controllers.restore_source("tp-acme", "dev")
    seen = await converge(orchestrator, host_cluster, cluster)
    assert seen[-1].stage == Stage.ready


async def test_names_too_long_for_kubernetes_fail_without_writing_anything(
    orchestrator: KubernetesOrchestrator,
    host_cluster: HostCluster,
) -> None:
    """Clusters named before the API's limits keep their names; on Kubernetes they fail."""
    revision = host_cluster.api.revision
    refused = await orchestrator.apply(spec("c" * 48), UNFENCED)
    assert refused.stage == Stage.failed
    assert "longer than 47 characters" in refused.message
    long_tenant = replace(spec(), tenant="t" * 61)
    assert "longer than 60" in (await orchestrator.apply(long_tenant, UNFENCED)).message
    assert (await orchestrator.delete(spec("c" * 48), UNFENCED)).stage == Stage.gone
    assert host_cluster.api.revision == revision


async def test_delete_removes_release_volumes_secrets_then_the_last_namespace(
    orchestrator: KubernetesOrchestrator,
    host_cluster: HostCluster,
) -> None:
    api = host_cluster.api
    first, second = spec("dev"), spec("prod", high_availability=False)
    await converge(orchestrator, host_cluster, first)
    await converge(orchestrator, host_cluster, second)
    assert len(api.list("PersistentVolumeClaim", "tp-acme")) == 4  # etcd's: 3 + 1

    async def delete(cluster: ClusterSpec) -> None:
        for _ in range(MAX_STEPS):
            if (await orchestrator.delete(cluster, UNFENCED)).stage == Stage.gone:
                return
            host_cluster.controllers.step()
        pytest.fail("not deleted")

    await delete(first)
    assert api.get("HelmRelease", "dev", "tp-acme") is None
    assert api.list("StatefulSet", "tp-acme") != []  # the other cluster's
    assert {c["metadata"]["name"] for c in api.list("PersistentVolumeClaim", "tp-acme")} == {
        "data-prod-etcd-0",
    }
    names = {s["metadata"]["name"] for s in api.list("Secret", "tp-acme")}
    assert names == {"vc-prod", "prod-encryption"}
    assert api.get("Namespace", "tp-acme") is not None  # not the last cluster
    await delete(second)
    host_cluster.controllers.step()  # the namespace controller empties it
    assert api.get("Namespace", "tp-acme") is None
    assert (await orchestrator.delete(second, UNFENCED)).stage == Stage.gone  # idempotent


async def test_api_server_throttling_errors_and_timeouts_fail_the_call_then_pass(
    orchestrator: KubernetesOrchestrator,
    host_cluster: HostCluster,
) -> None:
    """Each failure propagates (the reconciler framework retries the step after a backoff);
    the next call after the fault picks up where the cluster stands."""
    cluster = spec()
    api = host_cluster.api
    await orchestrator.apply(cluster, UNFENCED)
    for code in (429, 500, 409):
        api.fail_next(code, 1)
        with pytest.raises(ApiError) as raised:
            await orchestrator.apply(cluster, UNFENCED)
        assert raised.value.status.code == code
    api.stall_next(3 * SHORT_TIMEOUT_SECONDS, 1)  # longer than the client's budget
    async with orchestrator_of(host_cluster, SHORT_TIMEOUT_SECONDS) as impatient:
        with pytest.raises(httpx2.TimeoutException):
            await impatient.apply(cluster, UNFENCED)
    assert api.faults_left == 0
    seen = await converge(orchestrator, host_cluster, cluster)
    assert seen[-1].stage == Stage.ready
    assert len(api.list("HelmRelease")) == 1


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"orchestrator": "kubernetes", "kubeconfig": "/nonexistent/kubeconfig"}, "not a file"),
        ({"orchestrator": "kubernetes"}, "CLUSTER_TOKEN_WEBHOOK_URL"),
        ({"cluster_token_webhook_url": "tenantplane.example.com"}, "https://"),
        ({"cluster_token_webhook_url": "http://tenantplane.example.com"}, "over TLS only"),
        ({"cluster_token_webhook_ca_file": "/nonexistent/ca.pem"}, "not a file"),
        ({"sync_provider": "external-secrets", "vault_addr": "http://v"}, "ORCHESTRATOR"),
        (
            {
                "orchestrator": "kubernetes",
                "sync_provider": "external-secrets",
                "cluster_token_webhook_url": "https://tp.example.com",
            },
            "VAULT_ADDR",
        ),
        ({"vcluster_release_timeout": "ten minutes"}, "vcluster_release_timeout"),
    ],
)
def test_kubernetes_settings_that_cannot_work_are_refused(
    tmp_path: Path, overrides: dict[str, str], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        Settings(_env_file=None, data_dir=tmp_path, **overrides)  # type: ignore[arg-type]


def test_a_change_applied_during_the_first_install_is_not_running_before_flux_takes_it_up() -> None:
    """The HelmRelease as helm-controller shows it while it installs generation 1 (its
    attempt recorded, nothing observed, no history) after generation 2 (a resize) was
    applied: the workloads the install created serve, but the cluster does not run the
    change. On the bed a resize returned as run here, with the old share released."""
    cluster = spec(high_availability=False)
    kubeconfig = yaml.safe_dump({"clusters": [{"cluster": {"server": "https://dev.example"}}]})
    release: dict[str, Any] = {
        "kind": "HelmRelease",
        "metadata": {"name": "dev", "namespace": "tp-acme", "generation": 2},
        "status": {
            "lastAttemptedGeneration": 1,
            "conditions": [{"type": "Ready", "status": "Unknown", "reason": "Progressing"}],
        },
    }

    def ready(kind: str, name: str) -> dict[str, Any]:
        return {
            "kind": kind,
            "metadata": {"name": name, "generation": 1},
            "spec": {"replicas": 1},
            "status": {
                "observedGeneration": 1,
                "readyReplicas": 1,
                "updatedReplicas": 1,
                "replicas": 1,
            },
        }

    workloads = (ready("Deployment", "dev"), ready("StatefulSet", "dev-etcd"))
    secret = {"data": {"config": base64.b64encode(kubeconfig.encode()).decode()}}
    seen = observation_of(cluster, CHART, release, *workloads, secret)
    assert seen.stage == Stage.upgrading
    # Taken up (attempted), the same release serving its first install is Running.
    release["status"]["lastAttemptedGeneration"] = 2
    assert observation_of(cluster, CHART, release, *workloads, secret).stage == Stage.ready
