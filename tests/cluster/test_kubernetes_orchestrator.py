"""Clusters through the HTTP API with TENANTPLANE_ORCHESTRATOR=kubernetes: the app's
reconciler drives the fake host cluster through lightkube, the fake's controllers (Flux,
vCluster) move one step at a time, driven by the test between its looks at the API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tenantplane.db.engine import Database
from tests.cluster.polling import create_cluster, gone, status_matches
from tests.event.stream import events
from tests.factories import Factory, TenantFixture
from tests.fakes.kubernetes_fixtures import HostCluster, drive
from tests.http_client import bearer
from tests.tenant.conftest import Operated, operated

# Looks (each after one controller step) before giving up: turns a hang into a failure.


@pytest.fixture
async def kube_app(
    database: Database, database_url: str, tmp_path: Path, host_cluster: HostCluster
) -> AsyncIterator[Operated]:
    async for value in operated(
        database_url,
        tmp_path,
        orchestrator="kubernetes",
        cluster_token_webhook_url="https://tenantplane.example.net",
        kubeconfig=host_cluster.kubeconfig,
        kubernetes_context="host",
        kubernetes_timeout_seconds=1.0,
        kubernetes_poll_seconds=0.02,
        cluster_retry_seconds=0.05,
        cluster_resync_seconds=0.1,
        cluster_host_template="{cluster}.{tenant}.clusters.example.net",
    ):
        yield value


async def test_an_ha_cluster_lives_its_life_on_kubernetes(
    kube_app: Operated, factory: Factory, host_cluster: HostCluster
) -> None:
    client, api = kube_app.client, host_cluster.api
    tenant = await factory.tenant()
    path = f"{tenant.path}/clusters/dev"
    await create_cluster(
        client, tenant.path, tenant.admin_key, "dev", version="1.33", highAvailability=True
    )
    seen = await drive(
        client,
        host_cluster,
        path,
        tenant.admin_key,
        status_matches(phase="Running", haPhase="ha-healthy"),
        "Running and ha-healthy",
    )
    phases = [status["phase"] for status in seen]
    assert phases[0] in ("Pending", "Provisioning")
    # Every phase the reconciler wrote, from the tenant's events: polling between the
    # controllers' steps may miss a short one on a loaded machine.
    changes = await events(
        client, tenant, kind="cluster", name="dev", action="cluster.phase_changed"
    )
    assert [(change["data"]["from"], change["data"]["to"]) for change in reversed(changes)] == [
        ("Pending", "Provisioning"),
        ("Provisioning", "Running"),
    ]
    ready = [(s["haReplicasReady"], s["haEtcdReplicasReady"]) for s in seen]
    assert max(ready) == (3, 3)
    assert {r for r in ready if r not in ((0, 0), (3, 3))}  # seen in between
    final = seen[-1]
    assert final["kubernetesVersion"] == "v1.33.5"
    assert final["endpoint"] == f"https://dev.{tenant.name}.clusters.example.net"
    assert final["haConfigured"] is True
    assert final["haEnabledAt"]
    release = api.get("HelmRelease", "dev", f"tp-{tenant.name}")
    assert release is not None

    host_cluster.controllers.degrade(f"tp-{tenant.name}", "dev", 1)
    await drive(
        client,
        host_cluster,
        path,
        tenant.admin_key,
        status_matches(haPhase="ha-degraded"),
        "degraded",
    )
    host_cluster.controllers.recover(f"tp-{tenant.name}", "dev")
    await drive(
        client,
        host_cluster,
        path,
        tenant.admin_key,
        status_matches(haPhase="ha-healthy"),
        "healthy",
    )

    current = await client.get(path, headers=bearer(tenant.admin_key))
    upgraded = await client.patch(
        path,
        json={"version": "1.34"},
        headers={**bearer(tenant.admin_key), "If-Match": current.headers["ETag"]},
    )
    assert upgraded.status_code == 200, upgraded.text
    seen = await drive(
        client,
        host_cluster,
        path,
        tenant.admin_key,
        status_matches(phase="Running", kubernetesVersion="v1.34.1"),
        "upgraded",
    )
    assert "Upgrading" in [status["phase"] for status in seen]

    deleted = await client.delete(path, headers=bearer(tenant.admin_key))
    assert deleted.status_code in (200, 202), deleted.text
    await drive(client, host_cluster, path, tenant.admin_key, gone, "deleted")
    host_cluster.controllers.step()
    assert api.get("HelmRelease", "dev", f"tp-{tenant.name}") is None
    assert api.list("PersistentVolumeClaim", f"tp-{tenant.name}") == []
    assert api.get("Namespace", f"tp-{tenant.name}") is None  # its last cluster


async def test_a_failed_release_shows_failed_with_its_reason(
    kube_app: Operated, factory: Factory, host_cluster: HostCluster
) -> None:
    client = kube_app.client
    tenant = await factory.tenant()
    host_cluster.controllers.fail(f"tp-{tenant.name}", "dev", "chart pull failed")
    await create_cluster(client, tenant.path, tenant.admin_key, "dev")
    seen = await drive(
        client,
        host_cluster,
        f"{tenant.path}/clusters/dev",
        tenant.admin_key,
        status_matches(phase="Failed"),
        "Failed",
    )
    ready = next(c for c in seen[-1]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False"
    assert "chart pull failed" in ready["message"]


async def test_an_api_server_that_throttles_fails_and_stalls_for_a_while(
    kube_app: Operated, factory: Factory, host_cluster: HostCluster
) -> None:
    client, api = kube_app.client, host_cluster.api
    tenant = await factory.tenant()
    api.fail_next(429, 3)
    api.fail_next(500, 3)
    api.stall_next(1.5, 2)  # beyond the client's 1 s timeout
    await create_cluster(client, tenant.path, tenant.admin_key, "dev")
    await drive(
        client,
        host_cluster,
        f"{tenant.path}/clusters/dev",
        tenant.admin_key,
        status_matches(phase="Running"),
        "Running despite the faults",
    )
    assert api.faults_left == 0
    assert len(api.list("HelmRelease")) == 1


async def test_cancelling_a_tenant_deletes_its_clusters_on_kubernetes(
    kube_app: Operated, factory: Factory, host_cluster: HostCluster
) -> None:
    client, api = kube_app.client, host_cluster.api
    tenant: TenantFixture = await factory.tenant()
    for name in ("dev", "prod"):
        await create_cluster(client, tenant.path, tenant.admin_key, name)
        await drive(
            client,
            host_cluster,
            f"{tenant.path}/clusters/{name}",
            tenant.admin_key,
            status_matches(phase="Running"),
            f"{name} Running",
        )
    assert len(api.list("HelmRelease", f"tp-{tenant.name}")) == 2
    await kube_app.cli("tenant", "cancel", tenant.name)
    for name in ("dev", "prod"):
        await drive(
            client,
            host_cluster,
            f"{tenant.path}/clusters/{name}",
            tenant.admin_key,
            gone,
            f"{name} deleted",
        )
    host_cluster.controllers.step()
    assert api.list("HelmRelease") == []
    assert api.get("Namespace", f"tp-{tenant.name}") is None
