"""The SDK and tpctl walk every page of a list (docs/api.md, "Paging"): a small page size
changes how many requests a list takes, never what it answers."""

from __future__ import annotations

import asyncio

from tenantplane_client import AsyncTenantplane, Tenantplane
from tests.clients.conftest import Run, Tenant, ok
from tests.clients.test_sdk import FAST

SECRETS = 23


async def _secrets(tenant: Tenant, count: int) -> list[str]:
    names = [f"s{index:03d}" for index in range(count)]
    async with AsyncTenantplane(tenant.url, tenant.name, tenant.key, retry=FAST) as api:
        await asyncio.gather(
            *(
                api.secrets.create({"name": name, "secretPath": f"apps/{name}", "sync": []})
                for name in names
            )
        )
    return names


async def test_the_sdk_iterates_every_page(tenant: Tenant) -> None:
    names = await _secrets(tenant, SECRETS)
    requests: list[str] = []
    with Tenantplane(tenant.url, tenant.name, tenant.key, retry=FAST, page_size=4) as api:
        api.http.event_hooks["request"].append(lambda request: requests.append(str(request.url)))
        assert [secret.name for secret in api.secrets.iter()] == names
        assert len(requests) == 6  # 23 items, 4 a page
        assert all("limit=4" in url for url in requests)
        assert [secret.name for secret in api.secrets.list()] == names
        assert len(api.members.list()) == 1  # the admin: one page, no continue
    async with (
        AsyncTenantplane(tenant.url, tenant.name, tenant.key, retry=FAST, page_size=1) as aio,
        AsyncTenantplane(tenant.url, tenant.name, tenant.key, retry=FAST) as whole,
    ):
        assert [secret.name async for secret in aio.secrets.iter()] == names
        assert await aio.plans() == await whole.plans()
        assert await aio.versions() == await whole.versions()


async def test_tpctl_lists_walk_every_page(tenant: Tenant, tpctl: Run) -> None:
    names = await _secrets(tenant, SECRETS)
    listed = ok(tpctl("secrets", "list", "-o", "json", env={"TPCTL_PAGE_SIZE": "3"}))
    assert [secret["name"] for secret in listed] == names
    refused = tpctl("secrets", "list", env={"TPCTL_PAGE_SIZE": "1001"})
    assert refused.returncode != 0
    assert "TPCTL_PAGE_SIZE" in refused.stderr
