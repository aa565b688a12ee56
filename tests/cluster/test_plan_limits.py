"""Plan limits: cluster count and resource pool per tenant, from the plan catalogue."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tenantplane.db.engine import Database
from tenantplane.tenant.models import Plan
from tests.cluster.polling import create_cluster
from tests.conftest import make_settings
from tests.factories import Factory, TenantFixture
from tests.http_client import api_client, bearer, running_app


async def names(client: httpx.AsyncClient, tenant: TenantFixture) -> list[str]:
    listed = await client.get(f"{tenant.path}/clusters", headers=bearer(tenant.admin_key))
    return [item["name"] for item in listed.json()["items"]]


def assert_limit(response: httpx.Response, field: str) -> None:
    assert response.status_code == 403, response.text
    assert response.json()["code"] == "PLAN_LIMIT_EXCEEDED"
    assert response.json()["field"] == field


async def test_starter_allows_three_clusters(
    paused_client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant(plan=Plan.starter)
    for name in ("c1", "c2", "c3"):
        await create_cluster(paused_client, tenant.path, tenant.admin_key, name)
    fourth = await paused_client.post(
        f"{tenant.path}/clusters", json={"name": "c4"}, headers=bearer(tenant.admin_key)
    )
    assert_limit(fourth, "clusters")
    assert await names(paused_client, tenant) == ["c1", "c2", "c3"]
    # Terminating clusters still count until they are gone.
    await paused_client.delete(f"{tenant.path}/clusters/c1", headers=bearer(tenant.admin_key))
    again = await paused_client.post(
        f"{tenant.path}/clusters", json={"name": "c4"}, headers=bearer(tenant.admin_key)
    )
    assert_limit(again, "clusters")


@pytest.mark.parametrize(
    ("field", "first", "second"),
    [("cpu", "6", "2500m"), ("memory", "10Gi", "6145Mi"), ("storage", "150Gi", "51Gi")],
)
async def test_the_resource_pool_is_shared_by_the_tenants_clusters(
    paused_client: httpx.AsyncClient, factory: Factory, field: str, first: str, second: str
) -> None:
    # starter: cpu 8, memory 16Gi, storage 200Gi; defaults: cpu 1, memory 2Gi, storage 10Gi.
    tenant = await factory.tenant(plan=Plan.starter)
    await create_cluster(
        paused_client, tenant.path, tenant.admin_key, "big", resources={field: first}
    )
    over = await paused_client.post(
        f"{tenant.path}/clusters",
        json={"name": "more", "resources": {field: second}},
        headers=bearer(tenant.admin_key),
    )
    assert_limit(over, f"resources.{field}")
    assert await names(paused_client, tenant) == ["big"]


async def test_a_single_cluster_over_the_pool_is_refused(
    paused_client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant(plan=Plan.starter)
    response = await paused_client.post(
        f"{tenant.path}/clusters",
        json={"name": "huge", "resources": {"memory": "17Gi"}},
        headers=bearer(tenant.admin_key),
    )
    assert_limit(response, "resources.memory")
    # The same request fits a bigger plan.
    pro = await factory.tenant(plan=Plan.pro)
    await create_cluster(
        paused_client, pro.path, pro.admin_key, "huge", resources={"memory": "17Gi"}
    )


async def test_a_resize_over_the_pool_is_refused_and_changes_nothing(
    paused_client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant(plan=Plan.starter)
    await create_cluster(paused_client, tenant.path, tenant.admin_key, "aa", resources={"cpu": "4"})
    await create_cluster(paused_client, tenant.path, tenant.admin_key, "bb", resources={"cpu": "2"})
    path = f"{tenant.path}/clusters/bb"
    refused = await paused_client.patch(
        path, json={"resources": {"cpu": "4001m"}}, headers=bearer(tenant.admin_key)
    )
    assert_limit(refused, "resources.cpu")
    current = await paused_client.get(path, headers=bearer(tenant.admin_key))
    assert current.json()["resources"]["cpu"] == "2"
    # Growing into exactly the pool is fine: the cluster's own share is not counted twice.
    fits = await paused_client.patch(
        path, json={"resources": {"cpu": "4"}}, headers=bearer(tenant.admin_key)
    )
    assert fits.status_code == 200


async def test_limits_come_from_the_configured_catalogue(
    database: Database, database_url: str, tmp_path: Path, factory: Factory
) -> None:
    catalogue = tmp_path / "plans.yaml"
    catalogue.write_text(
        """
defaults:
  resources: {cpu: 500m, memory: 1Gi, storage: 5Gi}
plans:
  starter: {limits: {clusters: 1, cpu: "1", memory: 2Gi, storage: 10Gi}}
  pro: {limits: {clusters: 10, cpu: "32", memory: 64Gi, storage: 1Ti}}
  business: {limits: {clusters: 50, cpu: "128", memory: 256Gi, storage: 5Ti}}
  enterprise: {limits: {clusters: 250, cpu: "1024", memory: 2Ti, storage: 50Ti}}
""",
        encoding="utf-8",
    )
    settings = make_settings(database_url, tmp_path, run_reconcilers=False, plans_file=catalogue)
    tenant = await factory.tenant(plan=Plan.starter)
    async with running_app(settings) as app, api_client(app) as client:
        first = await create_cluster(client, tenant.path, tenant.admin_key, "one")
        assert first.json()["resources"] == {"cpu": "500m", "memory": "1Gi", "storage": "5Gi"}
        second = await client.post(
            f"{tenant.path}/clusters", json={"name": "two"}, headers=bearer(tenant.admin_key)
        )
        assert_limit(second, "clusters")


async def create_at_once(
    client: httpx.AsyncClient, tenant: TenantFixture, names: list[str]
) -> list[httpx.Response]:
    """One create per name, all sent together."""
    return await asyncio.gather(
        *(
            client.post(
                f"{tenant.path}/clusters", json={"name": name}, headers=bearer(tenant.admin_key)
            )
            for name in names
        )
    )


async def test_concurrent_creates_never_go_over_the_limit_together(
    paused_client: httpx.AsyncClient, factory: Factory
) -> None:
    # The limit check and the insert are one statement under the tenant's lock: creates
    # queued on that lock each see the clusters of those before them.
    tenant = await factory.tenant(plan=Plan.starter)
    answers = await create_at_once(paused_client, tenant, [f"c{i}" for i in range(8)])
    assert sorted(answer.status_code for answer in answers) == [201] * 3 + [403] * 5
    for refused in (answer for answer in answers if answer.status_code == 403):
        assert_limit(refused, "clusters")
    created = sorted(answer.json()["name"] for answer in answers if answer.status_code == 201)
    assert sorted(await names(paused_client, tenant)) == created


async def test_concurrent_creates_of_one_name_make_one_cluster(
    paused_client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant(plan=Plan.pro)
    answers = await create_at_once(paused_client, tenant, ["same"] * 5)
    assert sorted(answer.status_code for answer in answers) == [201] + [409] * 4
    assert await names(paused_client, tenant) == ["same"]


async def test_a_taken_name_at_the_limit_is_a_conflict_not_a_limit(
    paused_client: httpx.AsyncClient, factory: Factory
) -> None:
    # The name is looked up before the tenant's usage: the clearer answer wins.
    tenant = await factory.tenant(plan=Plan.starter)
    created = await create_at_once(paused_client, tenant, ["c0", "c1", "c2"])
    assert [answer.status_code for answer in created] == [201] * 3
    [again] = await create_at_once(paused_client, tenant, ["c1"])
    assert again.status_code == 409, again.text
    assert again.json()["field"] == "name"
    assert sorted(await names(paused_client, tenant)) == ["c0", "c1", "c2"]
