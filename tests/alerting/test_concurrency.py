"""Concurrent writers of one tenant's configuration never lose each other's changes."""

from __future__ import annotations

import asyncio

import httpx

from tests.factories import Factory
from tests.http_client import bearer

WRITERS = 8


async def test_concurrent_receiver_upserts_all_survive(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()

    async def upsert(index: int) -> httpx.Response:
        body = {"webhook_configs": [{"url": f"https://hooks.example.com/{index}"}]}
        return await client.put(
            f"{tenant.path}/alerting/receivers/team-{index}",
            json=body,
            headers=bearer(tenant.admin_key),
        )

    responses = await asyncio.gather(*(upsert(index) for index in range(WRITERS)))
    assert [response.status_code for response in responses] == [201] * WRITERS
    # Each write saw the previous one: the versions 2..WRITERS+1 were each handed out once.
    etags = sorted(int(response.headers["ETag"].strip('"')) for response in responses)
    assert etags == list(range(2, WRITERS + 2))
    config = await client.get(f"{tenant.path}/alerting/config", headers=bearer(tenant.admin_key))
    names = {receiver["name"] for receiver in config.json()["receivers"]}
    assert names == {"default"} | {f"team-{index}" for index in range(WRITERS)}
    assert config.headers["ETag"] == f'"{WRITERS + 1}"'


async def test_concurrent_writers_with_one_etag_exactly_one_wins(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await client.put(
        f"{tenant.path}/alerting/receivers/ops",
        json={"webhook_configs": [{"url": "https://hooks.example.com/ops"}]},
        headers=bearer(tenant.admin_key),
    )

    async def append_route(index: int) -> httpx.Response:
        headers = {**bearer(tenant.admin_key), "If-Match": '"2"'}
        body = {"receiver": "ops", "matchers": [f'team="t{index}"']}
        return await client.put(f"{tenant.path}/alerting/routes/0", json=body, headers=headers)

    responses = await asyncio.gather(*(append_route(index) for index in range(WRITERS)))
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [201] + [412] * (WRITERS - 1)
    routes = await client.get(f"{tenant.path}/alerting/routes", headers=bearer(tenant.admin_key))
    assert len(routes.json()["items"]) == 1
    assert routes.headers["ETag"] == '"3"'


async def test_writers_of_different_tenants_do_not_block_each_other_out(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenants = [await factory.tenant() for _ in range(3)]

    async def write(tenant_index: int, receiver_index: int) -> httpx.Response:
        tenant = tenants[tenant_index]
        return await client.put(
            f"{tenant.path}/alerting/receivers/r{receiver_index}",
            json={"name": "ignored"},
            headers=bearer(tenant.admin_key),
        )

    jobs = [write(t, r) for t in range(len(tenants)) for r in range(3)]
    responses = await asyncio.gather(*jobs)
    assert all(response.status_code == 201 for response in responses)
    for tenant in tenants:
        config = await client.get(
            f"{tenant.path}/alerting/config", headers=bearer(tenant.admin_key)
        )
        assert config.headers["ETag"] == '"4"'
