"""How the orchestrator reads real Flux when a release fails (helm-controller on the bed):
Provisioning while Flux retries, Failed once it stalls, and the documented recovery: a reset
(``flux reconcile helmrelease --reset``) once the cause is gone; and names the objects cannot
carry, refused before anything is written."""

from __future__ import annotations

import uuid

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import Namespace, Node
from lightkube.types import PatchType

from tenantplane.providers.kube import HelmRelease, Kube
from tenantplane.providers.orchestrator import Stage
from tenantplane.providers.orchestrator.kubernetes import ChartSettings, KubernetesOrchestrator
from tenantplane.reconcile.fence import UNFENCED
from tests.kubernetes.conftest import Bed
from tests.kubernetes.looks import cluster_spec, deleted, until
from tests.kubernetes.vcluster_stand_in import VClusterStandIn

pytestmark = pytest.mark.kubernetes

# A label no node carries until the test gives it one: the control plane cannot be scheduled.
MISSING_LABEL = "tenantplane.test/capacity"


def chart(bed: Bed, **values: object) -> ChartSettings:
    return ChartSettings(
        repository=bed.chart_repository,
        version="0.30.0",
        host_template="{cluster}.{tenant}.clusters.test",
        extra_values=dict(values),
        release_timeout="10s",
    )


async def test_a_stalled_release_is_failed_until_reset_after_its_cause_is_gone(
    bed: Bed, host: Kube, kube: Client, stand_in: VClusterStandIn
) -> None:
    unschedulable = {
        "controlPlane": {"statefulSet": {"scheduling": {"nodeSelector": {MISSING_LABEL: "yes"}}}}
    }
    orchestrator = KubernetesOrchestrator(host, chart(bed, **unschedulable))
    spec = cluster_spec()
    namespace = f"tp-{spec.tenant}"
    seen = await until(orchestrator, spec, Stage.failed)
    # Flux's attempts time out (the pod is never scheduled) and are retried: meanwhile the
    # cluster is still being created, with Flux's word; then Flux stops.
    assert {o.stage for o in seen[:-1]} <= {Stage.creating}
    failed = seen[-1].message
    assert "RetriesExceeded" in failed, failed
    assert "InstallFailed" in failed or "context deadline exceeded" in failed, failed
    # The cause goes (a node now has the label), yet Flux does not try again by itself...
    node = next(iter(kube.list(Node)))
    assert node.metadata is not None
    assert node.metadata.name is not None
    kube.patch(Node, node.metadata.name, {"metadata": {"labels": {MISSING_LABEL: "yes"}}})
    try:
        still = [await orchestrator.apply(spec, UNFENCED) for _ in range(3)]
        assert [o.stage for o in still] == [Stage.failed] * 3
        # ...until the operator resets it (what flux reconcile helmrelease --reset writes).
        token = uuid.uuid4().hex
        kube.patch(
            HelmRelease,
            spec.name,
            {
                "metadata": {
                    "annotations": {
                        "reconcile.fluxcd.io/requestedAt": token,
                        "reconcile.fluxcd.io/resetAt": token,
                    }
                }
            },
            namespace=namespace,
            patch_type=PatchType.MERGE,
        )
        recovered = await until(orchestrator, spec, Stage.ready)
        assert recovered[-1].endpoint == f"https://{spec.name}.{spec.tenant}.clusters.test"
    finally:
        kube.patch(Node, node.metadata.name, {"metadata": {"labels": {MISSING_LABEL: None}}})
        await deleted(orchestrator, spec)


async def test_names_the_objects_cannot_carry_are_refused_before_any_write(
    bed: Bed, host: Kube, kube: Client, stand_in: VClusterStandIn
) -> None:
    orchestrator = KubernetesOrchestrator(host, chart(bed))
    # The longest name runs: etcd's pods are labelled <name>-etcd-<revision hash> (63).
    longest = cluster_spec("c" * 47)
    running = await until(orchestrator, longest, Stage.ready)
    assert running[-1].etcd.ready == 1
    await deleted(orchestrator, longest)
    long_cluster = cluster_spec("c" * 48)
    refused = await orchestrator.apply(long_cluster, UNFENCED)
    assert refused.stage == Stage.failed
    assert "longer than 47 characters" in refused.message
    long_tenant = cluster_spec(tenant="t" * 61)
    assert "longer than 60" in (await orchestrator.apply(long_tenant, UNFENCED)).message
    names = {ns.metadata.name for ns in kube.list(Namespace) if ns.metadata}
    assert f"tp-{long_cluster.tenant}" not in names
