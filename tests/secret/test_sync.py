"""Sync into clusters through the simulator provider (no vault configured): what lives in
which cluster namespace, per-target status, overall phase and conditions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.cluster.models import Cluster, ClusterPhase
from tenantplane.db.engine import Database
from tenantplane.providers.sync.simulator import SimulatorSyncProvider
from tenantplane.secret import service as secret_service
from tenantplane.secret.models import Secret
from tests.conftest import make_settings
from tests.factories import ClusterFixture, Factory, TenantFixture
from tests.http_client import api_client, bearer, running_app
from tests.secret.support import (
    all_copies,
    condition,
    copies_in,
    target_statuses,
    wait_for_phase,
    wait_for_secret,
    wait_until,
)


async def create(
    client: httpx.AsyncClient, tenant: TenantFixture, name: str, sync: list[dict[str, str]]
) -> dict[str, Any]:
    response = await client.post(
        f"{tenant.path}/secrets",
        json={"name": name, "secretPath": f"apps/{name}", "sync": sync},
        headers=bearer(tenant.admin_key),
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def patch(
    client: httpx.AsyncClient, tenant: TenantFixture, name: str, sync: list[dict[str, str]]
) -> dict[str, Any]:
    response = await client.patch(
        f"{tenant.path}/secrets/{name}", json={"sync": sync}, headers=bearer(tenant.admin_key)
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_targets_on_running_clusters_are_synced_into_their_namespaces(
    client: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    prod = await factory.cluster_row(tenant.id, "prod")
    stage = await factory.cluster_row(tenant.id, "stage")
    created = await create(
        client,
        tenant,
        "db",
        [
            {"cluster": "prod", "namespace": "default"},
            {"cluster": "prod", "namespace": "jobs", "secretName": "db-copy"},
            {"cluster": "stage", "namespace": "default"},
        ],
    )
    path = f"{tenant.path}/secrets/db"
    body = await wait_for_phase(client, path, tenant.readonly_key, "Synced")

    assert await copies_in(database, prod.uid) == {("default", "db"), ("jobs", "db-copy")}
    assert await copies_in(database, stage.uid) == {("default", "db")}
    # Each copy points at the secret's path in the tenant's own mount.
    assert {(mount, source) for *_, mount, source in await all_copies(database)} == {
        (f"tenant-{tenant.name}", "apps/db")
    }

    assert target_statuses(body) == [
        ("prod", "default", "db", "Synced", "Synced"),
        ("prod", "jobs", "db-copy", "Synced", "Synced"),
        ("stage", "default", "db", "Synced", "Synced"),
    ]
    assert all(entry["lastSyncTime"].endswith("Z") for entry in body["status"]["syncStatuses"])
    assert all(entry["message"] for entry in body["status"]["syncStatuses"])
    ready = condition(body, "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("True", "Synced")
    assert ready["lastTransitionTime"].endswith("Z")
    assert ready["observedGeneration"] == 1
    path_condition = condition(body, "SecretPathResolved")
    assert path_condition is not None
    assert (path_condition["status"], path_condition["reason"]) == ("Unknown", "NotChecked")
    # Status changes are changes of the resource: the ETag moved.
    assert int(body["resourceVersion"]) > int(created["resourceVersion"])


async def test_a_cluster_that_is_not_running_keeps_its_target_pending(
    client: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    booting = await factory.cluster_row(tenant.id, "booting", phase=ClusterPhase.provisioning)
    await create(
        client,
        tenant,
        "app",
        [{"cluster": "prod", "namespace": "a"}, {"cluster": "booting", "namespace": "a"}],
    )
    path = f"{tenant.path}/secrets/app"
    body = await wait_for_phase(client, path, tenant.admin_key, "Pending")
    assert target_statuses(body) == [
        ("prod", "a", "app", "Synced", "Synced"),
        ("booting", "a", "app", "Pending", "ClusterNotReady"),
    ]
    assert "lastSyncTime" not in body["status"]["syncStatuses"][1]
    ready = condition(body, "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "SyncPending")
    assert await copies_in(database, booting.uid) == set()

    await factory.set_cluster_phase(booting, ClusterPhase.running)
    body = await wait_for_phase(client, path, tenant.admin_key, "Synced")
    assert target_statuses(body)[1] == ("booting", "a", "app", "Synced", "Synced")
    assert await copies_in(database, booting.uid) == {("a", "app")}


async def test_deleting_a_cluster_fails_its_targets(
    client: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    prod = await factory.cluster_row(tenant.id, "prod")
    doomed = await factory.cluster_row(tenant.id, "doomed")
    await create(
        client,
        tenant,
        "app",
        [{"cluster": "prod", "namespace": "a"}, {"cluster": "doomed", "namespace": "a"}],
    )
    path = f"{tenant.path}/secrets/app"
    await wait_for_phase(client, path, tenant.admin_key, "Synced")

    await factory.delete_cluster(doomed)
    body = await wait_for_phase(client, path, tenant.admin_key, "Failed")
    assert target_statuses(body) == [
        ("prod", "a", "app", "Synced", "Synced"),
        ("doomed", "a", "app", "Failed", "ClusterDeleted"),
    ]
    ready = condition(body, "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "SyncFailed")
    assert await copies_in(database, prod.uid) == {("a", "app")}
    # Retargeting away from the deleted cluster heals the secret.
    await patch(client, tenant, "app", [{"cluster": "prod", "namespace": "a"}])
    await wait_for_phase(client, path, tenant.admin_key, "Synced")


async def test_a_cluster_being_deleted_counts_as_deleted(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    cluster = await factory.cluster_row(tenant.id, "prod")
    await create(client, tenant, "app", [{"cluster": "prod", "namespace": "a"}])
    path = f"{tenant.path}/secrets/app"
    await wait_for_phase(client, path, tenant.admin_key, "Synced")
    await factory.request_cluster_deletion(cluster)
    body = await wait_for_phase(client, path, tenant.admin_key, "Failed")
    assert target_statuses(body) == [("prod", "a", "app", "Failed", "ClusterDeleted")]


async def test_patch_moves_the_copies(
    client: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    prod = await factory.cluster_row(tenant.id, "prod")
    stage = await factory.cluster_row(tenant.id, "stage")
    await create(
        client,
        tenant,
        "app",
        [{"cluster": "prod", "namespace": "a"}, {"cluster": "prod", "namespace": "b"}],
    )
    path = f"{tenant.path}/secrets/app"
    await wait_for_phase(client, path, tenant.admin_key, "Synced")
    assert await copies_in(database, prod.uid) == {("a", "app"), ("b", "app")}

    patched = await patch(
        client,
        tenant,
        "app",
        [{"cluster": "prod", "namespace": "b"}, {"cluster": "stage", "namespace": "c"}],
    )
    # The kept target keeps its status; the new one waits for the reconciler.
    assert target_statuses(patched) == [
        ("prod", "b", "app", "Synced", "Synced"),
        ("stage", "c", "app", "Pending", "Reconciling"),
    ]
    assert patched["status"]["phase"] == "Pending"
    body = await wait_for_phase(client, path, tenant.admin_key, "Synced")
    assert condition(body, "Ready") is not None
    assert await copies_in(database, prod.uid) == {("b", "app")}
    assert await copies_in(database, stage.uid) == {("c", "app")}

    # An empty list removes every target, and with them every copy.
    emptied = await patch(client, tenant, "app", [])
    assert emptied["status"]["syncStatuses"] == []
    body = await wait_for_phase(client, path, tenant.admin_key, "Synced")
    ready = condition(body, "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("True", "NoTargets")
    assert ready["observedGeneration"] == 3
    assert await all_copies(database) == []


async def test_a_secret_without_targets_is_synced(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    created = await create(client, tenant, "lonely", [])
    assert created["status"]["phase"] == "Pending"
    body = await wait_for_phase(client, f"{tenant.path}/secrets/lonely", tenant.admin_key, "Synced")
    assert body["status"]["syncStatuses"] == []


async def test_copies_on_a_cluster_that_is_not_running_are_removed_once_it_runs(
    client: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    prod = await factory.cluster_row(tenant.id, "prod")
    await create(client, tenant, "app", [{"cluster": "prod", "namespace": "a"}])
    path = f"{tenant.path}/secrets/app"
    await wait_for_phase(client, path, tenant.admin_key, "Synced")

    await factory.set_cluster_phase(prod, ClusterPhase.upgrading)
    await patch(client, tenant, "app", [])

    def removal_waiting(body: dict[str, Any]) -> bool:
        ready = condition(body, "Ready")
        return ready is not None and ready["reason"] == "SyncPending"

    # No target left, but the removed target's copy is still there: not Synced yet.
    body = await wait_for_secret(client, path, tenant.admin_key, removal_waiting, "removal")
    assert body["status"]["phase"] == "Pending"
    assert "still to delete" in (condition(body, "Ready") or {})["message"]
    assert await copies_in(database, prod.uid) == {("a", "app")}

    await factory.set_cluster_phase(prod, ClusterPhase.running)
    await wait_for_phase(client, path, tenant.admin_key, "Synced")
    assert await copies_in(database, prod.uid) == set()


async def test_delete_removes_the_synced_copies(
    client: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    prod = await factory.cluster_row(tenant.id, "prod")
    await create(
        client,
        tenant,
        "app",
        [{"cluster": "prod", "namespace": "a"}, {"cluster": "prod", "namespace": "b"}],
    )
    await create(client, tenant, "keep", [{"cluster": "prod", "namespace": "a"}])
    await wait_for_phase(client, f"{tenant.path}/secrets/app", tenant.admin_key, "Synced")
    await wait_for_phase(client, f"{tenant.path}/secrets/keep", tenant.admin_key, "Synced")

    deleted = await client.delete(f"{tenant.path}/secrets/app", headers=bearer(tenant.admin_key))
    assert deleted.status_code == 204

    async def only_keep_left() -> bool:
        return await copies_in(database, prod.uid) == {("a", "keep")}

    await wait_until(only_keep_left, "the deleted secret's copies to be removed")

    async def row_gone() -> bool:
        async with database.sessionmaker() as session:
            count = await session.scalar(select(func.count()).select_from(Secret))
        return count == 1

    await wait_until(row_gone, "the deleted secret's row to go")


async def test_a_recreated_secret_keeps_its_copy(
    client: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    """Copies carry their owner: the old secret's clean-up never removes the new one's copy."""
    tenant = await factory.tenant()
    prod = await factory.cluster_row(tenant.id, "prod")
    target = [{"cluster": "prod", "namespace": "a"}]
    await create(client, tenant, "app", target)
    path = f"{tenant.path}/secrets/app"
    await wait_for_phase(client, path, tenant.admin_key, "Synced")
    deleted = await client.delete(path, headers=bearer(tenant.admin_key))
    assert deleted.status_code == 204
    await create(client, tenant, "app", target)
    await wait_for_phase(client, path, tenant.admin_key, "Synced")

    async def old_row_gone() -> bool:
        async with database.sessionmaker() as session:
            count = await session.scalar(select(func.count()).select_from(Secret))
        return count == 1

    await wait_until(old_row_gone, "the old secret's row to go")
    copies = await SimulatorSyncProvider(database).copies(prod.uid)
    async with database.sessionmaker() as session:
        live_uid = await session.scalar(select(Secret.uid))
    assert [(c.namespace, c.name, c.owner_uid) for c in copies] == [("a", "app", live_uid)]


async def test_clusters_changed_wakes_the_secrets_of_a_cluster_at_once(
    factory: Factory, database: Database, database_url: str, tmp_path: Path
) -> None:
    """The hook for the cluster feature: no waiting for the (here hour-long) resync."""
    settings = make_settings(
        database_url,
        tmp_path,
        secret_resync_seconds=3600,
        secret_retry_seconds=3600,
        reconcile_idle_poll_seconds=3600,
    )
    tenant = await factory.tenant()
    doomed = await factory.cluster_row(tenant.id, "doomed")
    async with running_app(settings) as app, api_client(app) as client:
        await create(client, tenant, "app", [{"cluster": "doomed", "namespace": "a"}])
        path = f"{tenant.path}/secrets/app"
        await wait_for_phase(client, path, tenant.admin_key, "Synced")
        async with database.transaction() as session:
            await factory_delete_and_notify(session, tenant.id, doomed)
        body = await wait_for_phase(client, path, tenant.admin_key, "Failed")
    assert target_statuses(body) == [("doomed", "a", "app", "Failed", "ClusterDeleted")]


async def factory_delete_and_notify(
    session: AsyncSession, tenant_id: int, cluster: ClusterFixture
) -> None:
    """What the cluster feature does when a deletion completes, in one transaction."""
    await session.execute(delete(Cluster).where(Cluster.uid == cluster.uid))
    await secret_service.clusters_changed(session, tenant_id, [cluster.name])


async def test_a_copy_in_place_is_not_written_again(
    client: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    prod = await factory.cluster_row(tenant.id, "prod")
    await create(client, tenant, "app", [{"cluster": "prod", "namespace": "a"}])
    path = f"{tenant.path}/secrets/app"
    first = await wait_for_phase(client, path, tenant.admin_key, "Synced")
    # Another target makes the reconciler pass over the first one again.
    await patch(
        client,
        tenant,
        "app",
        [{"cluster": "prod", "namespace": "a"}, {"cluster": "prod", "namespace": "b"}],
    )
    second = await wait_for_phase(client, path, tenant.admin_key, "Synced")
    assert len(second["status"]["syncStatuses"]) == 2
    assert (
        second["status"]["syncStatuses"][0]["lastSyncTime"]
        == first["status"]["syncStatuses"][0]["lastSyncTime"]
    )
    writes = {
        (copy.namespace, copy.write_count)
        for copy in await SimulatorSyncProvider(database).copies(prod.uid)
    }
    assert writes == {("a", 1), ("b", 1)}
