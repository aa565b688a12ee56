"""Secrets through the HTTP API with TENANTPLANE_ORCHESTRATOR=kubernetes and
TENANTPLANE_SYNC_PROVIDER=external-secrets: the cluster runs on the fake host cluster, the
copy is an ExternalSecret in the tenant cluster (the fake serves as that cluster too), and
the target's status follows what External Secrets (the fake's controller) reports."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tenantplane.db.engine import Database
from tests.cluster.polling import create_cluster, status_matches
from tests.factories import Factory
from tests.fakes.kubernetes_fixtures import HostCluster, drive
from tests.fakes.vault import FakeVault
from tests.http_client import bearer
from tests.tenant.conftest import Operated, operated

MAX_LOOKS = 400


@pytest.fixture
async def synced_app(
    database: Database,
    database_url: str,
    tmp_path: Path,
    host_cluster: HostCluster,
    vault: tuple[FakeVault, str],
) -> AsyncIterator[Operated]:
    fake, address = vault
    async for value in operated(
        database_url,
        tmp_path,
        orchestrator="kubernetes",
        cluster_token_webhook_url="https://tenantplane.example.net",
        sync_provider="external-secrets",
        kubeconfig=host_cluster.kubeconfig,
        kubernetes_timeout_seconds=2.0,
        kubernetes_poll_seconds=0.02,
        cluster_retry_seconds=0.05,
        cluster_resync_seconds=0.1,
        vcluster_server_template=host_cluster.url,
        vault_addr=address,
        vault_token=fake.token,
        secret_resync_seconds=0.1,
        secret_retry_seconds=0.05,
        reconcile_idle_poll_seconds=0.1,
    ):
        yield value


async def drive_secret(
    client: httpx.AsyncClient,
    host: HostCluster,
    path: str,
    key: str,
    until: Callable[[dict[str, Any]], bool],
    what: str,
) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for _ in range(MAX_LOOKS):
        response = await client.get(path, headers=bearer(key))
        assert response.status_code == 200, response.text
        body = response.json()
        if until(body):
            return body
        host.controllers.step()
        import asyncio

        await asyncio.sleep(0.03)
    pytest.fail(f"never saw {what}; last: {body}")


def target(body: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any]
    [entry] = body["status"]["syncStatuses"]
    return entry


async def test_a_secret_syncs_fails_recovers_and_is_removed_through_external_secrets(
    synced_app: Operated,
    factory: Factory,
    host_cluster: HostCluster,
    vault: tuple[FakeVault, str],
) -> None:
    client, api = synced_app.client, host_cluster.api
    tenant = await factory.tenant()
    vault[0].enable_kv2(f"tenant-{tenant.name}")
    vault[0].put(f"tenant-{tenant.name}", "apps/db", {"password": "s3cret"})
    await create_cluster(client, tenant.path, tenant.admin_key, "prod")
    await drive(
        client,
        host_cluster,
        f"{tenant.path}/clusters/prod",
        tenant.admin_key,
        status_matches(phase="Running"),
        "Running",
    )
    created = await client.post(
        f"{tenant.path}/secrets",
        json={
            "name": "db",
            "secretPath": "apps/db",
            "sync": [{"cluster": "prod", "namespace": "payments"}],
        },
        headers=bearer(tenant.admin_key),
    )
    assert created.status_code == 201, created.text
    path = f"{tenant.path}/secrets/db"
    body = await drive_secret(
        client,
        host_cluster,
        path,
        tenant.admin_key,
        lambda b: b["status"]["phase"] == "Synced",
        "Synced",
    )
    assert target(body)["reason"] == "Synced"
    external = api.get("ExternalSecret", "db", "payments")
    assert external is not None
    assert external["spec"]["dataFrom"] == [{"extract": {"key": "apps/db"}}]
    store = api.get("ClusterSecretStore", "tenantplane-vault")
    assert store is not None
    assert store["spec"]["provider"]["vault"]["path"] == f"tenant-{tenant.name}"

    host_cluster.controllers.set_external_secret(
        "payments", "db", False, "could not get secret data from provider"
    )
    body = await drive_secret(
        client,
        host_cluster,
        path,
        tenant.admin_key,
        lambda b: b["status"]["phase"] == "Failed",
        "Failed",
    )
    assert target(body)["reason"] == "SyncError"
    assert "could not get secret data from provider" in target(body)["message"]
    host_cluster.controllers.set_external_secret("payments", "db", True, "secret synced")
    await drive_secret(
        client,
        host_cluster,
        path,
        tenant.admin_key,
        lambda b: b["status"]["phase"] == "Synced",
        "Synced again",
    )

    current = await client.get(path, headers=bearer(tenant.admin_key))
    removed = await client.patch(
        path,
        json={"sync": []},
        headers={**bearer(tenant.admin_key), "If-Match": current.headers["ETag"]},
    )
    assert removed.status_code == 200, removed.text
    await drive_secret(
        client,
        host_cluster,
        path,
        tenant.admin_key,
        lambda b: api.get("ExternalSecret", "db", "payments") is None,
        "the ExternalSecret removed",
    )
