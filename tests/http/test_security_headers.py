"""Response headers set by one middleware (the served process: test_served_hardening.py)."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from tests.factories import Factory
from tests.http_client import bearer


async def test_without_hsts_setting_no_hsts_header_but_no_store_and_nosniff(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    for response in (
        await client.get(tenant.path, headers=bearer(tenant.readonly_key)),
        await client.get(f"{tenant.path}/invoices", headers=bearer(tenant.readonly_key)),
        await client.get(tenant.path),
    ):
        assert response.headers["cache-control"] == "no-store"
        assert response.headers["x-content-type-options"] == "nosniff"
        assert "strict-transport-security" not in response.headers


async def test_the_documentation_assets_keep_their_own_caching(app: FastAPI) -> None:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as docs:
        page = await docs.get("/docs")
        asset = await docs.get("/static-offline-docs/swagger-ui.css")
    assert page.headers["cache-control"] == "no-store"
    assert asset.status_code == 200
    assert "cache-control" not in asset.headers
    assert asset.headers["x-content-type-options"] == "nosniff"
