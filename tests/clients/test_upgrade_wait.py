"""Waiting for an upgrade waits for the upgrade: the reconciler has acted on the change
(status.observedGeneration past the PATCH answer's) and the VersionUpToDate condition is
True, not merely phase Running, which the cluster still is before the upgrade starts."""

from __future__ import annotations

from typing import Any

import httpx

from tenantplane_client import NO_RETRIES, Tenantplane, models
from tests.clients.conftest import Run, ok


def cluster(phase: str, observed: int, up_to_date: bool, reason: str, running: str) -> Any:
    return {
        "name": "web",
        "displayName": "web",
        "type": "shared",
        "version": "1.34",
        "highAvailability": False,
        "resources": {"cpu": "1", "memory": "1Gi", "storage": "1Gi"},
        "alerts": {},
        "createdAt": "2026-01-01T00:00:00Z",
        "resourceVersion": str(observed),
        "status": {
            "observedGeneration": observed,
            "phase": phase,
            "endpoint": "https://web.example:6443",
            "kubernetesVersion": running,
            "conditions": [
                {"type": "Ready", "status": "True", "reason": phase, "message": ""},
                {
                    "type": "VersionUpToDate",
                    "status": "True" if up_to_date else "False",
                    "reason": reason,
                    "message": f"running {running}, desired 1.34",
                },
            ],
            "metrics": {},
            "haConfigured": False,
            "haPhase": "",
            "haReplicasDesired": 0,
            "haReplicasReady": 0,
            "haEtcdReplicasDesired": 0,
            "haEtcdReplicasReady": 0,
        },
    }


def scripted(answers: list[Any]) -> tuple[httpx.MockTransport, list[str]]:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.method)
        return httpx.Response(200, json=answers[min(len(seen), len(answers)) - 1])

    return httpx.MockTransport(answer), seen


def test_wait_for_a_change_waits_for_the_reconciler_and_the_version() -> None:
    patched = models.ClusterRead.model_validate(
        cluster("Running", 2, False, "UpgradePending", "v1.33.5")
    )
    transport, seen = scripted(
        [
            cluster("Running", 2, False, "UpgradePending", "v1.33.5"),  # not yet started
            cluster("Upgrading", 3, False, "UpgradeInProgress", "v1.33.5"),
            cluster("Running", 3, True, "Observed", "v1.34.1"),
        ]
    )
    progress: list[str] = []

    def report(seen_cluster: models.ClusterRead) -> None:
        progress.append(seen_cluster.status.phase)

    with Tenantplane("http://api.test", "t", "k", retry=NO_RETRIES, transport=transport) as api:
        done = api.clusters.wait_for(
            "web", changed=patched, interval=0, timeout=5, on_progress=report
        )
    assert done.status.kubernetes_version == "v1.34.1"
    assert done.status.observed_generation == 3
    assert seen == ["GET", "GET", "GET"]
    assert progress == ["Running", "Upgrading", "Running"]


def test_tpctl_upgrade_wait_returns_once_the_new_version_runs(tpctl: Run) -> None:
    versions = sorted(
        (item["version"] for item in ok(tpctl("versions", "list"))),
        key=lambda version: tuple(int(part) for part in version.split(".")),
    )
    fast = ("--interval", "0.05", "--timeout", "60")
    ok(tpctl("clusters", "create", "web", "--version", versions[0], "--wait", *fast))
    before = ok(tpctl("clusters", "get", "web"))
    upgraded = tpctl("clusters", "upgrade", "web", "--version", versions[1], "--wait", *fast)
    after = ok(upgraded)
    conditions = {item["type"]: item for item in after["status"]["conditions"]}
    assert conditions["VersionUpToDate"]["status"] == "True", conditions["VersionUpToDate"]
    assert after["status"]["kubernetesVersion"].startswith(f"v{versions[1]}.")
    assert after["status"]["phase"] == "Running"
    assert after["status"]["observedGeneration"] > before["status"]["observedGeneration"]
    assert "Upgrading" in upgraded.stderr
    # Upgrading to the version it runs changes nothing: --wait returns at once.
    again = ok(tpctl("clusters", "upgrade", "web", "--version", versions[1], "--wait", *fast))
    assert again["status"]["observedGeneration"] == after["status"]["observedGeneration"]
