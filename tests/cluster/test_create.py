"""POST, GET and list: every create-time rule over HTTP."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from tenantplane.cluster.models import Cluster, ClusterEvent, ClusterHistory
from tenantplane.db.engine import Database
from tenantplane.tenant.models import Plan
from tests.cluster.polling import create_cluster
from tests.cluster.test_quantity import INVALID
from tests.conftest import make_settings
from tests.factories import Factory
from tests.http_client import api_client, bearer, running_app
from tests.statements import notifies, statements_sent
from tests.wakeups import wake_ups


async def test_create_fills_defaults_and_returns_etag_and_warnings(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    response = await client.post(
        f"{tenant.path}/clusters",
        json={"name": "dev", "displayName": "Something Else"},
        headers=bearer(tenant.admin_key),
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert response.headers["ETag"] == f'"{body["resourceVersion"]}"'
    assert body["name"] == "dev"
    assert body["displayName"] == "dev"  # accepted and ignored
    assert body["type"] == "shared"
    assert body["version"] == "1.33"  # the catalogue's default
    assert body["highAvailability"] is False
    assert body["resources"] == {"cpu": "1", "memory": "2Gi", "storage": "10Gi"}
    assert body["alerts"] == {}
    assert body["warnings"] == []
    assert body["createdAt"].endswith("Z")
    status = body["status"]
    assert status["phase"] in {"Pending", "Provisioning", "Running"}
    assert status["haPhase"] == ""
    assert status["haReplicasDesired"] == 0
    assert status["haEtcdReplicasDesired"] == 0
    assert status["haConfigured"] is False
    assert "haEnabledAt" not in status  # omitted until stamped


async def test_create_keeps_what_the_client_chose(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant(plan=Plan.pro)
    body = (
        await create_cluster(
            client,
            tenant.path,
            tenant.admin_key,
            "prod-eu",
            type="shared",
            version="1.32",
            highAvailability=True,
            resources={"cpu": "2500m", "memory": "4Gi", "storage": "100G"},
            alerts={"email": "ops@example.com", "nested": {"severity": ["critical"]}},
        )
    ).json()
    assert body["version"] == "1.32"
    assert body["highAvailability"] is True
    assert body["resources"] == {"cpu": "2500m", "memory": "4Gi", "storage": "100G"}
    assert body["alerts"] == {"email": "ops@example.com", "nested": {"severity": ["critical"]}}
    assert body["status"]["haReplicasDesired"] == 3
    assert body["status"]["haEtcdReplicasDesired"] == 3
    assert body["status"]["haPhase"] == "pending"
    assert body["warnings"] == []


async def test_partial_resources_take_the_defaults_for_the_rest(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    body = (
        await create_cluster(client, tenant.path, tenant.admin_key, "dev", resources={"cpu": "2"})
    ).json()
    assert body["resources"] == {"cpu": "2", "memory": "2Gi", "storage": "10Gi"}


async def test_ha_on_the_oldest_version_warns_that_it_is_retiring(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    ha_old = await create_cluster(
        client, tenant.path, tenant.admin_key, "ha-old", version="1.31", highAvailability=True
    )
    assert ha_old.json()["warnings"] == [
        {
            "code": "HA_K8S_VERSION_RETIRING",
            "field": "version",
            "message": ha_old.json()["warnings"][0]["message"],
            "severity": "warning",
        }
    ]
    plain_old = await create_cluster(client, tenant.path, tenant.admin_key, "old", version="1.31")
    assert plain_old.json()["warnings"] == []
    ha_new = await create_cluster(
        client, tenant.path, tenant.admin_key, "ha-new", version="1.32", highAvailability=True
    )
    assert ha_new.json()["warnings"] == []


async def post(client: httpx.AsyncClient, path: str, key: str, body: object) -> httpx.Response:
    return await client.post(f"{path}/clusters", json=body, headers=bearer(key))


async def test_dedicated_type_is_rejected_with_its_code(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    response = await post(client, tenant.path, tenant.admin_key, {"name": "d", "type": "x"})
    assert response.status_code == 400
    response = await post(
        client, tenant.path, tenant.admin_key, {"name": "dd", "type": "dedicated"}
    )
    assert response.status_code == 400
    assert response.json()["code"] == "CLUSTER_DEDICATED_UNSUPPORTED"
    assert response.json()["field"] == "type"
    for other in ("Shared", "private", "", 1):
        response = await post(client, tenant.path, tenant.admin_key, {"name": "dd", "type": other})
        assert response.status_code == 400, other
        assert response.json()["field"] == "type"
    assert (await client.get(f"{tenant.path}/clusters", headers=bearer(tenant.admin_key))).json()[
        "items"
    ] == []


@pytest.mark.parametrize(
    "name", ["a", "A1", "Dev", "-dev", "dev-", "dev_1", "dev.1", "x" * 48, "", " dev", 7]
)
async def test_names_must_be_dns_labels_of_2_to_47(
    client: httpx.AsyncClient, factory: Factory, name: object
) -> None:
    tenant = await factory.tenant()
    response = await post(client, tenant.path, tenant.admin_key, {"name": name})
    assert response.status_code == 400
    assert response.json()["field"] == "name"


async def test_name_is_required_and_47_characters_fit(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """47: the longest name whose Kubernetes objects are valid (docs/api.md, "Names")."""
    tenant = await factory.tenant()
    missing = await post(client, tenant.path, tenant.admin_key, {})
    assert missing.status_code == 400
    assert missing.json()["field"] == "name"
    await create_cluster(client, tenant.path, tenant.admin_key, "a" * 47)
    await create_cluster(client, tenant.path, tenant.admin_key, "0a")
    too_long = await post(client, tenant.path, tenant.admin_key, {"name": "b" * 48})
    assert too_long.status_code == 400
    assert "at most 47 characters" in too_long.json()["message"]
    listed = await client.get(f"{tenant.path}/clusters", headers=bearer(tenant.admin_key))
    assert sorted(item["name"] for item in listed.json()["items"]) == ["0a", "a" * 47]


async def test_a_cluster_named_before_the_limit_is_still_served(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    old = await factory.cluster_row(tenant.id, "c" * 63)
    path = f"{tenant.path}/clusters/{old.name}"
    found = await client.get(path, headers=bearer(tenant.admin_key))
    assert found.status_code == 200
    assert found.json()["name"] == old.name
    assert (await client.delete(path, headers=bearer(tenant.admin_key))).status_code == 202


async def test_unknown_fields_and_wrong_types_are_400(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    unknown = await post(client, tenant.path, tenant.admin_key, {"name": "dev", "region": "eu"})
    assert unknown.status_code == 400
    assert unknown.json()["code"] == "UNKNOWN_FIELD"
    assert unknown.json()["field"] == "region"
    nested = await post(
        client, tenant.path, tenant.admin_key, {"name": "dev", "resources": {"gpu": "1"}}
    )
    assert nested.status_code == 400
    assert nested.json()["field"] == "resources.gpu"
    for field, value in (
        ("highAvailability", "yes"),
        ("highAvailability", 1),
        ("alerts", ["a"]),
        ("alerts", "x"),
        ("resources", "1"),
        ("version", 1.33),
    ):
        response = await post(client, tenant.path, tenant.admin_key, {"name": "dev", field: value})
        assert response.status_code == 400, (field, value)
        assert response.json()["field"].startswith(field)


@pytest.mark.parametrize("version", ["1.20", "1.35", "1.33.1", "v1.33", "latest", "", "01.33"])
async def test_unsupported_versions_are_rejected(
    client: httpx.AsyncClient, factory: Factory, version: str
) -> None:
    tenant = await factory.tenant()
    response = await post(
        client, tenant.path, tenant.admin_key, {"name": "dev", "version": version}
    )
    assert response.status_code == 400
    assert response.json()["code"] == "VERSION_UNSUPPORTED"
    assert response.json()["field"] == "version"


async def test_quantities_follow_the_kubernetes_grammar_over_http(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant(plan=Plan.enterprise)
    accepted = {
        "cpu": ["100m", "0.5", "1.", ".5", "2", "1e0", "+1"],
        "memory": ["128974848", "129e6", "129M", "128974848000m", "123Mi", "1.5Gi", "1E9"],
        "storage": ["10Gi", "5e9", "100G", "1Ti"],
    }
    for field, values in accepted.items():
        for index, value in enumerate(values):
            name = f"{field}-{index}"
            response = await post(
                client, tenant.path, tenant.admin_key, {"name": name, "resources": {field: value}}
            )
            assert response.status_code == 201, (field, value, response.text)
            assert response.json()["resources"][field] == value
            await client.delete(f"{tenant.path}/clusters/{name}", headers=bearer(tenant.admin_key))
    rejected = [*INVALID, "-1", "-100m", "-1Gi", "0", "0m", "0Gi", "9Ei", "x" * 65]
    for field in ("cpu", "memory", "storage"):
        for value in rejected:
            response = await post(
                client, tenant.path, tenant.admin_key, {"name": "bad", "resources": {field: value}}
            )
            assert response.status_code == 400, (field, value, response.text)
            assert response.json()["field"] == f"resources.{field}"
            assert response.json()["code"] == "VALIDATION_FAILED"
    for wrong in (1, 1.5, None, True):
        response = await post(
            client, tenant.path, tenant.admin_key, {"name": "bad", "resources": {"cpu": wrong}}
        )
        if wrong is None:
            assert response.status_code == 201  # null: the default
        else:
            assert response.status_code == 400, wrong
            assert response.json()["field"] == "resources.cpu"


async def test_duplicates_conflict_within_a_tenant_only(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    first, second = await factory.tenant(), await factory.tenant()
    await create_cluster(client, first.path, first.admin_key, "dev")
    again = await post(client, first.path, first.admin_key, {"name": "dev"})
    assert again.status_code == 409
    assert again.json()["code"] == "ALREADY_EXISTS"
    await create_cluster(client, second.path, second.admin_key, "dev")


async def test_access_levels(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant, other = await factory.tenant(), await factory.tenant()
    await create_cluster(client, tenant.path, tenant.admin_key, "dev")
    readonly = await post(client, tenant.path, tenant.readonly_key, {"name": "ro"})
    assert readonly.status_code == 403
    assert (await client.post(f"{tenant.path}/clusters", json={"name": "x1"})).status_code == 401
    foreign = await post(client, tenant.path, other.admin_key, {"name": "x2"})
    assert foreign.status_code == 403
    assert (
        await client.get(f"{tenant.path}/clusters", headers=bearer(other.admin_key))
    ).status_code == 403
    assert (
        await client.get(f"{tenant.path}/clusters/dev", headers=bearer(other.admin_key))
    ).status_code == 403
    # Members read.
    listed = await client.get(f"{tenant.path}/clusters", headers=bearer(tenant.readonly_key))
    assert listed.status_code == 200
    assert [item["name"] for item in listed.json()["items"]] == ["dev"]


async def test_get_and_list(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.readonly_key)
    assert (await client.get(f"{tenant.path}/clusters", headers=headers)).json() == {"items": []}
    for name in ("one", "two"):
        await create_cluster(client, tenant.path, tenant.admin_key, name)
    listed = (await client.get(f"{tenant.path}/clusters", headers=headers)).json()["items"]
    assert [item["name"] for item in listed] == ["one", "two"]
    assert all(item["warnings"] == [] for item in listed)
    one = await client.get(f"{tenant.path}/clusters/one", headers=headers)
    assert one.status_code == 200
    assert one.headers["ETag"] == f'"{one.json()["resourceVersion"]}"'
    missing = await client.get(f"{tenant.path}/clusters/nope", headers=headers)
    assert missing.status_code == 404
    invalid = await client.get(f"{tenant.path}/clusters/Not_Valid", headers=headers)
    assert invalid.status_code == 400
    assert invalid.json()["code"] == "INVALID_NAME"


async def test_versions_catalogue_is_listed(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    assert (await client.get("/versions")).status_code == 401
    response = await client.get("/versions", headers=bearer(tenant.readonly_key))
    assert response.status_code == 200
    body = response.json()
    assert body["default"] == "1.33"
    assert [item["version"] for item in body["items"]] == ["1.31", "1.32", "1.33", "1.34"]
    assert body["items"][0] == {
        "version": "1.31",
        "kubernetesVersion": body["items"][0]["kubernetesVersion"],
        "default": False,
        "retiring": True,
    }
    assert all(
        item["kubernetesVersion"].startswith(f"v{item['version']}.") for item in body["items"]
    )
    assert [item["default"] for item in body["items"]] == [False, False, True, False]


async def test_a_create_carries_its_wake_up_in_its_insert(
    database: Database, database_url: str, factory: Factory, tmp_path: Path
) -> None:
    """The NOTIFY that wakes other processes' reconcilers rides in the INSERT (no statement
    of its own, none while the tenant's lock is held); it is delivered at commit, and this
    process's runners are woken too. A create over the plan's limit inserts no row, so its
    RETURNING evaluates nothing."""
    tenant = await factory.tenant(plan=Plan.starter)
    postgresql = database.engine.dialect.name == "postgresql"
    settings = make_settings(database_url, tmp_path, run_reconcilers=False)
    async with (
        wake_ups(database_url, "clusters") as woken,
        running_app(settings) as app,
        api_client(app) as client,
    ):
        with statements_sent(app.state.database.engine) as statements:
            answers = [
                await client.post(
                    f"{tenant.path}/clusters",
                    json={"name": f"c{i}"},
                    headers=bearer(tenant.admin_key),
                )
                for i in range(4)  # the starter plan allows 3
            ]
        assert [answer.status_code for answer in answers] == [201, 201, 201, 403]
        assert woken.local.is_set()
        inserts = [s for s in statements if "INSERT INTO CLUSTERS" in s]
        assert len(inserts) == 4, statements
        assert notifies(statements) == (inserts if postgresql else []), statements
        # On PostgreSQL the created history row rides in the same statement (a WITH).
        history = [s for s in statements if s.startswith("INSERT INTO CLUSTER_HISTORY")]
        assert len(history) == (0 if postgresql else 3), statements
        await woken.delivered()


async def test_a_create_records_the_clusters_created_history_row(
    database: Database, database_url: str, factory: Factory, tmp_path: Path
) -> None:
    """The history row that billing meters from: the new cluster as created, stamped with its
    creation time (on PostgreSQL written by the create's INSERT itself). No reconcilers: the
    cluster stays as created."""
    tenant = await factory.tenant()
    settings = make_settings(database_url, tmp_path, run_reconcilers=False)
    async with running_app(settings) as app, api_client(app) as client:
        await create_cluster(
            client, tenant.path, tenant.admin_key, "metered", highAvailability=True
        )
    async with database.transaction() as session:
        cluster = (
            await session.execute(
                select(Cluster).where(Cluster.tenant_id == tenant.id, Cluster.name == "metered")
            )
        ).scalar_one()
        history = select(ClusterHistory).where(ClusterHistory.cluster_uid == cluster.uid)
        rows = (await session.execute(history)).scalars().all()
    [row] = rows
    expected = ClusterHistory.snapshot(cluster, ClusterEvent.created, cluster.created_at)
    shown = [column.name for column in ClusterHistory.__table__.columns if column.name != "id"]
    assert {name: getattr(row, name) for name in shown} == {
        name: getattr(expected, name) for name in shown
    }
    assert (row.event, row.phase, row.high_availability) == ("created", "Pending", True)


async def test_a_create_checks_its_name_in_the_statement_that_locks_its_tenant(
    database_url: str, factory: Factory, tmp_path: Path
) -> None:
    """Whether the tenant has a cluster of that name is read by the statement that takes
    the tenant's lock (and its plan), not by a SELECT of its own: one round trip of every
    create less. A name taken is still refused, before anything is inserted."""
    tenant = await factory.tenant()
    settings = make_settings(database_url, tmp_path, run_reconcilers=False)
    async with running_app(settings) as app, api_client(app) as client:
        with statements_sent(app.state.database.engine) as statements:
            answers = [
                await client.post(
                    f"{tenant.path}/clusters",
                    json={"name": "dup"},
                    headers=bearer(tenant.admin_key),
                )
                for _ in range(2)
            ]
    assert [answer.status_code for answer in answers] == [201, 409]
    assert answers[1].json()["field"] == "name"
    # (SQLite quotes the column: TENANTS."PLAN".)
    locks = [s for s in statements if s.startswith("SELECT TENANTS.") and "PLAN" in s]
    assert len(locks) == 2, statements
    assert all("EXISTS (SELECT CLUSTERS.ID" in lock for lock in locks), locks
    assert not [s for s in statements if s.startswith("SELECT CLUSTERS.ID")], statements
    assert len([s for s in statements if "INSERT INTO CLUSTERS" in s]) == 1
