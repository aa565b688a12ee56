"""From an observation to the cluster's status columns (cluster/status.py, pure functions)."""

from __future__ import annotations

from datetime import UTC, datetime

from tenantplane.cluster.models import Cluster
from tenantplane.cluster.status import observed_status
from tenantplane.providers.orchestrator import Observation, Replicas, Stage


def test_while_an_upgrade_rolls_the_version_condition_names_what_ran_before() -> None:
    """The Kubernetes orchestrator cannot tell which version serves while pods of both roll
    (its upgrading observation names none): the status keeps the version that ran, and the
    condition says the same, not "running nothing yet" next to kubernetesVersion v1.33.5."""
    cluster = Cluster(
        name="dev",
        version="1.34",
        phase="Running",
        ha_phase="",
        high_availability=False,
        kubernetes_version="v1.33.5",
        conditions=[],
    )
    rolling = Observation(
        stage=Stage.upgrading,
        endpoint="https://dev.example",
        control_plane=Replicas(1, 1),
        etcd=Replicas(1, 1),
        message="upgrading to v1.34.1: control plane 1/1 ready, etcd 1/1 ready",
    )
    status = observed_status(cluster, rolling, datetime(2026, 12, 2, tzinfo=UTC))
    assert status["phase"] == "Upgrading"
    assert status["kubernetes_version"] == "v1.33.5"
    [version] = [entry for entry in status["conditions"] if entry["type"] == "VersionUpToDate"]
    assert (version["status"], version["reason"]) == ("False", "UpgradeInProgress")
    assert version["message"] == "running v1.33.5, desired 1.34"
