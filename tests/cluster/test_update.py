"""PATCH and DELETE rules over HTTP."""

from __future__ import annotations

import httpx
import pytest

from tenantplane.tenant.models import Plan
from tests.cluster.polling import create_cluster, gone, poll, wait_running
from tests.factories import Factory, TenantFixture
from tests.http_client import bearer


async def patch(
    client: httpx.AsyncClient,
    tenant: TenantFixture,
    name: str,
    body: object,
    if_match: str | None = None,
) -> httpx.Response:
    headers = bearer(tenant.admin_key)
    if if_match is not None:
        headers["If-Match"] = if_match
    return await client.patch(f"{tenant.path}/clusters/{name}", json=body, headers=headers)


async def running_cluster(
    client: httpx.AsyncClient, tenant: TenantFixture, name: str = "dev", **fields: object
) -> dict[str, object]:
    await create_cluster(client, tenant.path, tenant.admin_key, name, **fields)
    return await wait_running(client, tenant.path, tenant.admin_key, name)


async def test_upgrade_by_one_minor_with_if_match(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await running_cluster(client, tenant, version="1.32")
    current = await client.get(f"{tenant.path}/clusters/dev", headers=bearer(tenant.admin_key))
    etag = current.headers["ETag"]
    response = await patch(client, tenant, "dev", {"version": "1.33"}, if_match=etag)
    assert response.status_code == 200, response.text
    assert response.json()["version"] == "1.33"
    assert response.headers["ETag"] != etag
    assert response.headers["ETag"] == f'"{response.json()["resourceVersion"]}"'
    # The old ETag is now stale.
    stale = await patch(client, tenant, "dev", {"alerts": {"a": 1}}, if_match=etag)
    assert stale.status_code == 412
    assert stale.json()["code"] == "PRECONDITION_FAILED"
    upgraded = await poll(
        client,
        f"{tenant.path}/clusters/dev",
        bearer(tenant.admin_key),
        lambda r: (
            r.json()["status"]["phase"] == "Running"
            and r.json()["status"]["kubernetesVersion"].startswith("v1.33.")
        ),
        "the upgrade to 1.33",
    )
    conditions = {c["type"]: c for c in upgraded.json()["status"]["conditions"]}
    assert conditions["VersionUpToDate"]["status"] == "True"


@pytest.mark.parametrize(
    ("target", "code"),
    [
        ("1.34", "VERSION_SKIP_UNSUPPORTED"),
        ("1.31", "VERSION_DOWNGRADE_UNSUPPORTED"),
        ("1.35", "VERSION_UNSUPPORTED"),
        ("2.0", "VERSION_UNSUPPORTED"),
        ("1.33.0", "VERSION_UNSUPPORTED"),
    ],
)
async def test_version_rules(
    client: httpx.AsyncClient, factory: Factory, target: str, code: str
) -> None:
    tenant = await factory.tenant()
    await running_cluster(client, tenant, version="1.32")
    response = await patch(client, tenant, "dev", {"version": target})
    assert response.status_code == 400
    assert response.json()["code"] == code
    assert response.json()["field"] == "version"


async def test_same_version_is_a_no_op(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    await create_cluster(client, tenant.path, tenant.admin_key, "dev", version="1.32")
    before = await client.get(f"{tenant.path}/clusters/dev", headers=bearer(tenant.admin_key))
    response = await patch(client, tenant, "dev", {"version": "1.32", "displayName": "x"})
    assert response.status_code == 200
    assert response.json()["displayName"] == "dev"
    assert response.json()["version"] == "1.32"
    # Nothing about the spec changed (the status may have moved on meanwhile).
    assert response.json()["resources"] == before.json()["resources"]


async def test_version_changes_wait_for_running(
    paused_client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await create_cluster(paused_client, tenant.path, tenant.admin_key, "dev", version="1.32")
    response = await patch(paused_client, tenant, "dev", {"version": "1.33"})
    assert response.status_code == 409
    assert response.json()["code"] == "CLUSTER_BUSY"
    # Other changes are fine before Running.
    resized = await patch(paused_client, tenant, "dev", {"resources": {"cpu": "2"}})
    assert resized.status_code == 200


@pytest.mark.parametrize(("created", "requested"), [(False, True), (True, False)])
async def test_toggling_ha_is_rejected_both_ways(
    paused_client: httpx.AsyncClient, factory: Factory, created: bool, requested: bool
) -> None:
    tenant = await factory.tenant()
    await create_cluster(
        paused_client, tenant.path, tenant.admin_key, "dev", highAvailability=created
    )
    response = await patch(paused_client, tenant, "dev", {"highAvailability": requested})
    assert response.status_code == 400
    assert response.json()["code"] == "HA_ENABLE_ON_EXISTING_UNSUPPORTED"
    assert response.json()["field"] == "highAvailability"
    same = await patch(paused_client, tenant, "dev", {"highAvailability": created})
    assert same.status_code == 200


async def test_immutable_and_malformed_updates(
    paused_client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await create_cluster(paused_client, tenant.path, tenant.admin_key, "dev")
    cases: list[tuple[object, str, str | None]] = [
        ({"name": "other"}, "FIELD_IMMUTABLE", "name"),
        ({"type": "dedicated"}, "FIELD_IMMUTABLE", "type"),
        ({}, "NO_UPDATABLE_FIELDS", None),
        ({"region": "eu"}, "UNKNOWN_FIELD", "region"),
        ({"version": None}, "VALIDATION_FAILED", "version"),
        ({"resources": {"memory": "12 Gi"}}, "VALIDATION_FAILED", "resources.memory"),
        ({"resources": {"cpu": "-1"}}, "VALIDATION_FAILED", "resources.cpu"),
        ({"alerts": []}, "VALIDATION_FAILED", "alerts"),
    ]
    for body, code, field in cases:
        response = await patch(paused_client, tenant, "dev", body)
        assert response.status_code == 400, body
        assert response.json()["code"] == code, body
        assert response.json().get("field") == field, body
    unchanged = await patch(paused_client, tenant, "dev", {"name": "dev", "type": "shared"})
    assert unchanged.status_code == 200


async def test_resize_and_alerts_are_recorded(
    paused_client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    created = await create_cluster(paused_client, tenant.path, tenant.admin_key, "dev")
    response = await patch(
        paused_client,
        tenant,
        "dev",
        {"resources": {"memory": "4Gi"}, "alerts": {"slack": "#ops"}},
        if_match=created.headers["ETag"],
    )
    assert response.status_code == 200
    assert response.json()["resources"] == {"cpu": "1", "memory": "4Gi", "storage": "10Gi"}
    assert response.json()["alerts"] == {"slack": "#ops"}
    assert int(response.json()["resourceVersion"]) > int(created.json()["resourceVersion"])


async def test_patch_and_delete_need_admin_and_an_existing_cluster(
    paused_client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await create_cluster(paused_client, tenant.path, tenant.admin_key, "dev")
    path = f"{tenant.path}/clusters/dev"
    readonly = bearer(tenant.readonly_key)
    assert (
        await paused_client.patch(path, json={"alerts": {}}, headers=readonly)
    ).status_code == 403
    assert (await paused_client.delete(path, headers=readonly)).status_code == 403
    missing = await patch(paused_client, tenant, "nope", {"alerts": {}})
    assert missing.status_code == 404
    assert (
        await paused_client.delete(f"{tenant.path}/clusters/nope", headers=bearer(tenant.admin_key))
    ).status_code == 404


async def test_delete_is_terminating_then_gone(
    paused_client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    created = await create_cluster(paused_client, tenant.path, tenant.admin_key, "dev")
    path = f"{tenant.path}/clusters/dev"
    stale = await paused_client.delete(
        path, headers={**bearer(tenant.admin_key), "If-Match": '"999"'}
    )
    assert stale.status_code == 412
    deleted = await paused_client.delete(
        path, headers={**bearer(tenant.admin_key), "If-Match": created.headers["ETag"]}
    )
    assert deleted.status_code == 202
    assert deleted.json()["status"]["phase"] == "Terminating"
    again = await paused_client.delete(path, headers=bearer(tenant.admin_key))
    assert again.status_code == 202
    refused = await patch(paused_client, tenant, "dev", {"alerts": {"x": 1}})
    assert refused.status_code == 409
    assert refused.json()["code"] == "CLUSTER_TERMINATING"
    # Terminating clusters are still listed until the orchestrator has removed them.
    listed = await paused_client.get(f"{tenant.path}/clusters", headers=bearer(tenant.admin_key))
    assert [item["status"]["phase"] for item in listed.json()["items"]] == ["Terminating"]


async def test_deleted_clusters_disappear_and_the_name_is_free_again(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant(plan=Plan.pro)
    await running_cluster(client, tenant, highAvailability=True)
    deleted = await client.delete(f"{tenant.path}/clusters/dev", headers=bearer(tenant.admin_key))
    assert deleted.status_code == 202
    await poll(client, f"{tenant.path}/clusters/dev", bearer(tenant.admin_key), gone, "deletion")
    assert (
        await client.delete(f"{tenant.path}/clusters/dev", headers=bearer(tenant.admin_key))
    ).status_code == 404
    reborn = await running_cluster(client, tenant)
    assert reborn["highAvailability"] is False
