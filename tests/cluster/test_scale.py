"""Two hundred clusters across tenants all reach Running."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tenantplane.tenant.models import Plan
from tests.cluster.polling import DEADLINE_SECONDS
from tests.factories import Factory, TenantFixture
from tests.http_client import bearer

TENANTS = 10
CLUSTERS_PER_TENANT = 20


async def all_running(client: httpx.AsyncClient, tenant: TenantFixture) -> bool:
    listed = await client.get(f"{tenant.path}/clusters", headers=bearer(tenant.readonly_key))
    items = listed.json()["items"]
    return len(items) == CLUSTERS_PER_TENANT and all(
        item["status"]["phase"] == "Running" for item in items
    )


@pytest.mark.slow
async def test_two_hundred_clusters_across_tenants_all_run(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenants = [await factory.tenant(plan=Plan.business) for _ in range(TENANTS)]

    async def create_all(tenant: TenantFixture) -> None:
        for index in range(CLUSTERS_PER_TENANT):
            response = await client.post(
                f"{tenant.path}/clusters",
                json={"name": f"c-{index:03d}", "highAvailability": index % 5 == 0},
                headers=bearer(tenant.admin_key),
            )
            assert response.status_code == 201, response.text

    await asyncio.gather(*(create_all(tenant) for tenant in tenants))

    loop = asyncio.get_running_loop()
    give_up = loop.time() + 2 * DEADLINE_SECONDS
    pending = list(tenants)
    while pending:
        pending = [tenant for tenant in pending if not await all_running(client, tenant)]
        if pending and loop.time() > give_up:
            pytest.fail(f"{len(pending)} tenants still have clusters that are not Running")
        await asyncio.sleep(0.2)
    total = 0
    for tenant in tenants:
        listed = await client.get(f"{tenant.path}/clusters", headers=bearer(tenant.admin_key))
        for item in listed.json()["items"]:
            assert item["status"]["kubernetesVersion"].startswith("v1.33.")
            assert item["status"]["endpoint"]
            total += 1
    assert total == TENANTS * CLUSTERS_PER_TENANT
