"""Asynchronous provisioning through the simulator: phases, HA, connection details,
ETags that follow status, and the history billing meters from."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from itertools import pairwise

import httpx
from cryptography import x509
from sqlalchemy import select

from tenantplane.cluster.models import ClusterHistory
from tenantplane.db.engine import Database
from tenantplane.tenant.models import Plan
from tests.cluster.polling import create_cluster, gone, poll, status_matches, wait_running
from tests.factories import Factory, TenantFixture
from tests.http_client import bearer


async def history(database: Database, tenant: TenantFixture, name: str) -> Sequence[ClusterHistory]:
    async with database.sessionmaker() as session:
        statement = (
            select(ClusterHistory)
            .where(ClusterHistory.tenant_id == tenant.id, ClusterHistory.cluster_name == name)
            .order_by(ClusterHistory.at, ClusterHistory.id)
        )
        return (await session.execute(statement)).scalars().all()


async def test_a_cluster_provisions_to_running_with_endpoint_ca_and_version(
    client: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    created = await create_cluster(client, tenant.path, tenant.admin_key, "dev", version="1.32")
    body = await wait_running(client, tenant.path, tenant.admin_key, "dev")
    status = body["status"]
    assert status["kubernetesVersion"].startswith("v1.32.")
    assert status["endpoint"].startswith("https://")
    assert status["haPhase"] == ""
    assert status["haReplicasDesired"] == 0
    assert status["haReplicasReady"] == 0
    assert body["resourceVersion"] != created.json()["resourceVersion"]
    conditions = {condition["type"]: condition for condition in status["conditions"]}
    assert set(conditions) == {"Ready", "ControlPlaneAvailable", "VersionUpToDate"}
    for condition in conditions.values():
        assert set(condition) == {"type", "status", "reason", "message", "lastTransitionTime"}
        assert condition["status"] == "True"
        assert condition["lastTransitionTime"].endswith("Z")

    details = await client.get(
        f"{tenant.path}/clusters/dev/connection-details", headers=bearer(tenant.readonly_key)
    )
    assert details.status_code == 200
    assert details.json()["endpoint"] == status["endpoint"]
    pem = base64.b64decode(details.json()["certificateAuthority"])
    certificate = x509.load_pem_x509_certificate(pem)
    assert certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca

    phases = [(entry.event, entry.phase) for entry in await history(database, tenant, "dev")]
    assert phases == [
        ("created", "Pending"),
        ("phase_changed", "Provisioning"),
        ("phase_changed", "Running"),
    ]


async def test_every_cluster_gets_its_own_ca(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    for name in ("one", "two"):
        await create_cluster(client, tenant.path, tenant.admin_key, name)
    cas = set()
    for name in ("one", "two"):
        await wait_running(client, tenant.path, tenant.admin_key, name)
        details = await client.get(
            f"{tenant.path}/clusters/{name}/connection-details", headers=bearer(tenant.admin_key)
        )
        cas.add(details.json()["certificateAuthority"])
    assert len(cas) == 2


async def test_connection_details_are_503_until_running(
    paused_client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await create_cluster(paused_client, tenant.path, tenant.admin_key, "dev")
    response = await paused_client.get(
        f"{tenant.path}/clusters/dev/connection-details", headers=bearer(tenant.admin_key)
    )
    assert response.status_code == 503
    assert response.json()["code"] == "CLUSTER_NOT_READY"
    assert int(response.headers["Retry-After"]) >= 1
    missing = await paused_client.get(
        f"{tenant.path}/clusters/nope/connection-details", headers=bearer(tenant.admin_key)
    )
    assert missing.status_code == 404
    invalid = await paused_client.get(
        f"{tenant.path}/clusters/NO/connection-details", headers=bearer(tenant.admin_key)
    )
    assert invalid.status_code == 400


async def test_ha_cluster_becomes_healthy_and_keeps_its_anchor_through_an_upgrade(
    client: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant(plan=Plan.pro)
    await create_cluster(
        client, tenant.path, tenant.admin_key, "ha", version="1.32", highAvailability=True
    )
    path, headers = f"{tenant.path}/clusters/ha", bearer(tenant.admin_key)
    seen: list[tuple[str, str, int, int]] = []

    def record_until_healthy(response: httpx.Response) -> bool:
        status = response.json()["status"]
        seen.append(
            (
                status["phase"],
                status["haPhase"],
                status["haReplicasReady"],
                status["haEtcdReplicasReady"],
            )
        )
        return bool(status["haPhase"] == "ha-healthy")

    healthy = (await poll(client, path, headers, record_until_healthy, "ha-healthy")).json()
    status = healthy["status"]
    assert status["haConfigured"] is True
    assert status["haEnabledAt"] is not None
    assert (status["haReplicasDesired"], status["haReplicasReady"]) == (3, 3)
    assert (status["haEtcdReplicasDesired"], status["haEtcdReplicasReady"]) == (3, 3)
    # Before the first 3/3 + 3/3 the HA phase is pending, never healthy; counts only grow.
    for phase, ha_phase, control_plane, etcd in seen[:-1]:
        assert ha_phase == "pending", seen
        assert phase in {"Pending", "Provisioning", "Running"}
        assert control_plane <= 3
        assert etcd <= 3
    ready_counts = [(cp, etcd) for _, _, cp, etcd in seen]
    assert ready_counts == sorted(ready_counts, key=sum)
    anchor = status["haEnabledAt"]

    upgraded = await client.patch(path, json={"version": "1.33"}, headers=headers)
    assert upgraded.status_code == 200
    during: list[str] = []

    def upgraded_and_healthy(response: httpx.Response) -> bool:
        status = response.json()["status"]
        during.append(status["phase"])
        assert status["haEnabledAt"] == anchor  # never changed, never cleared
        assert status["haConfigured"] is True
        return bool(
            status["kubernetesVersion"].startswith("v1.33.")
            and status["phase"] == "Running"
            and status["haPhase"] == "ha-healthy"
        )

    await poll(client, path, headers, upgraded_and_healthy, "the HA upgrade")
    entries = await history(database, tenant, "ha")
    phases = [entry.phase for entry in entries if entry.event == "phase_changed"]
    assert phases == ["Provisioning", "Running", "Upgrading", "Running"]
    configured = [entry for entry in entries if entry.event == "ha_configured"]
    assert len(configured) == 1
    assert configured[0].ha_enabled_at is not None
    assert [entry.version for entry in entries if entry.event == "spec_changed"] == ["1.33"]


async def test_etag_follows_status_changes(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    created = await create_cluster(client, tenant.path, tenant.admin_key, "dev")
    running = await poll(
        client,
        f"{tenant.path}/clusters/dev",
        bearer(tenant.admin_key),
        status_matches(phase="Running"),
        "Running",
    )
    assert running.headers["ETag"] != created.headers["ETag"]
    # A stale ETag from before provisioning no longer matches.
    stale = await client.patch(
        f"{tenant.path}/clusters/dev",
        json={"alerts": {"x": 1}},
        headers={**bearer(tenant.admin_key), "If-Match": created.headers["ETag"]},
    )
    assert stale.status_code == 412
    fresh = await client.patch(
        f"{tenant.path}/clusters/dev",
        json={"alerts": {"x": 1}},
        headers={**bearer(tenant.admin_key), "If-Match": running.headers["ETag"]},
    )
    assert fresh.status_code == 200


async def test_deletion_is_recorded_and_the_history_outlives_the_cluster(
    client: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    await create_cluster(client, tenant.path, tenant.admin_key, "dev", resources={"cpu": "2"})
    await wait_running(client, tenant.path, tenant.admin_key, "dev")
    resized = await client.patch(
        f"{tenant.path}/clusters/dev",
        json={"resources": {"cpu": "3"}},
        headers=bearer(tenant.admin_key),
    )
    assert resized.status_code == 200
    await client.delete(f"{tenant.path}/clusters/dev", headers=bearer(tenant.admin_key))
    await poll(client, f"{tenant.path}/clusters/dev", bearer(tenant.admin_key), gone, "deletion")
    entries = await history(database, tenant, "dev")
    assert [entry.event for entry in entries] == [
        "created",
        "phase_changed",
        "phase_changed",
        "spec_changed",
        "phase_changed",
        "deleted",
    ]
    assert [entry.phase for entry in entries][-2:] == ["Terminating", "Deleted"]
    assert [entry.cpu_millicores for entry in entries] == [2000, 2000, 2000, 3000, 3000, 3000]
    assert all(entry.at <= later.at for entry, later in pairwise(entries))
    assert len({entry.cluster_uid for entry in entries}) == 1
