"""What the orchestrator reads from the chart's workloads as the real controllers move them:
states they pass through too quickly to catch on demand are held by admission (a replaced pod
refused), and read the way the reconciler reads them."""

from __future__ import annotations

import pytest
from lightkube import Client
from lightkube.resources.apps_v1 import Deployment, StatefulSet
from lightkube.resources.core_v1 import Pod

from tenantplane.providers.kube import Kube
from tenantplane.providers.orchestrator import Stage
from tenantplane.providers.orchestrator.kubernetes import KubernetesOrchestrator
from tests.kubernetes.admission import held, no_new_pods, pod_short, rollout_stuck
from tests.kubernetes.conftest import Bed
from tests.kubernetes.looks import chart, cluster_spec, deleted, settled
from tests.kubernetes.vcluster_stand_in import VClusterStandIn

pytestmark = pytest.mark.kubernetes


async def test_a_replica_short_is_no_upgrade_and_a_stuck_rollout_is(
    bed: Bed, host: Kube, kube: Client, stand_in: VClusterStandIn
) -> None:
    """A pod deleted (evicted, its node gone) and not yet replaced: the Deployment reports
    fewer replicas, all of them updated; the StatefulSet its revisions unchanged. Neither is a
    rollout: reading the first as one made the cluster Upgrading, and the API refused a
    version change (409) until the pod was back (seen on a loaded machine)."""
    orchestrator = KubernetesOrchestrator(host, chart(bed.chart_repository))
    spec = cluster_spec("short", high_availability=True, cpu="3", memory="6Gi", storage="30Gi")
    namespace = f"tp-{spec.tenant}"
    workloads = (
        (Deployment, spec.name, "vcluster"),
        (StatefulSet, f"{spec.name}-etcd", "vcluster-etcd"),
    )
    try:
        await settled(orchestrator, spec)
        for workload, name, app in workloads:
            [pod, *_] = kube.list(Pod, namespace=namespace, labels={"app": app})
            assert pod.metadata is not None
            assert pod.metadata.name is not None
            async with no_new_pods(kube, namespace, app=app, release=spec.name):
                kube.delete(Pod, pod.metadata.name, namespace=namespace, grace_period=0)
                await held(kube, workload, name, namespace, pod_short)
                short = await orchestrator.observe(spec)
                assert short.stage == Stage.ready, (app, short.message)
                assert short.version == spec.version
                assert not short.settled
                ready = short.control_plane if workload is Deployment else short.etcd
                assert ready.ready == 2, (app, short.message)
            await settled(orchestrator, spec)
        # A rollout of the control plane (what `kubectl rollout restart` writes), its new
        # pods refused: the old ReplicaSet's pods still counted, the cluster upgrading.
        restart = {"kubectl.kubernetes.io/restartedAt": "2026-12-02T00:00:00Z"}
        async with no_new_pods(kube, namespace, app="vcluster", release=spec.name):
            kube.patch(
                Deployment,
                spec.name,
                {"spec": {"template": {"metadata": {"annotations": restart}}}},
                namespace=namespace,
            )
            await held(kube, Deployment, spec.name, namespace, rollout_stuck)
            rolling = await orchestrator.observe(spec)
            assert rolling.stage == Stage.upgrading, rolling.message
    finally:
        await deleted(orchestrator, spec)
