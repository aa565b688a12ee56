"""Secrets over the real cluster lifecycle: clusters created, provisioned by the simulator
orchestrator and deleted through the clusters API."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import select

from tenantplane.cluster.models import Cluster
from tenantplane.db.engine import Database
from tests.cluster.polling import create_cluster, gone, poll, wait_running
from tests.factories import Factory
from tests.http_client import bearer
from tests.secret.support import copies_in, target_statuses, wait_for_phase, wait_for_secret


async def cluster_uid(database: Database, tenant_id: int, name: str) -> str:
    async with database.sessionmaker() as session:
        uid = await session.scalar(
            select(Cluster.uid).where(Cluster.tenant_id == tenant_id, Cluster.name == name)
        )
    assert uid is not None
    return uid


async def test_a_secret_follows_its_cluster_from_creation_to_deletion(
    client: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    created = await create_cluster(client, tenant.path, tenant.admin_key, "prod")
    assert created.status_code == 201, created.text
    uid = await cluster_uid(database, tenant.id, "prod")

    response = await client.post(
        f"{tenant.path}/secrets",
        json={
            "name": "db",
            "secretPath": "apps/db",
            "sync": [{"cluster": "prod", "namespace": "default"}],
        },
        headers=headers,
    )
    assert response.status_code == 201, response.text
    path = f"{tenant.path}/secrets/db"
    if created.json()["status"]["phase"] != "Running":
        # While the cluster provisions, its target waits (unless it already became Running).
        def waiting_or_synced(body: dict[str, Any]) -> bool:
            reasons = {reason for *_, reason in target_statuses(body)}
            return bool(reasons & {"ClusterNotReady", "Synced"})

        await wait_for_secret(client, path, tenant.admin_key, waiting_or_synced, "a status")

    await wait_running(client, tenant.path, tenant.admin_key, "prod")
    body = await wait_for_phase(client, path, tenant.admin_key, "Synced")
    assert target_statuses(body) == [("prod", "default", "db", "Synced", "Synced")]
    assert await copies_in(database, uid) == {("default", "db")}

    deleted = await client.delete(f"{tenant.path}/clusters/prod", headers=headers)
    assert deleted.status_code == 202, deleted.text
    body = await wait_for_phase(client, path, tenant.admin_key, "Failed")
    assert target_statuses(body) == [("prod", "default", "db", "Failed", "ClusterDeleted")]
    await poll(client, f"{tenant.path}/clusters/prod", headers, gone, "the cluster to go")
    # A target on a deleted cluster is refused from now on.
    refused = await client.patch(
        path, json={"sync": [{"cluster": "prod", "namespace": "default"}]}, headers=headers
    )
    assert refused.status_code == 400
    assert refused.json()["field"] == "sync[0].cluster"
