"""Reading a tenant's event stream through the API, as a client would."""

from __future__ import annotations

from typing import Any

import httpx

from tests.factories import TenantFixture
from tests.http_client import bearer


async def events(
    client: httpx.AsyncClient, tenant: TenantFixture, key: str | None = None, **query: Any
) -> list[dict[str, Any]]:
    """Every event matching ``query``, newest first, walking all pages."""
    found: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": 1000, **query}
    while True:
        response = await client.get(
            f"{tenant.path}/events", params=params, headers=bearer(key or tenant.readonly_key)
        )
        assert response.status_code == 200, response.text
        page = response.json()
        found.extend(page["items"])
        if "continue" not in page:
            return found
        params = {**params, "continue": page["continue"]}


async def audit_events(client: httpx.AsyncClient, tenant: TenantFixture) -> list[dict[str, Any]]:
    return await events(client, tenant, type="audit")


async def key_id(client: httpx.AsyncClient, tenant: TenantFixture, role: str) -> str:
    """The id of the factory's key of ``role`` (the tenant has one of each)."""
    listed = await client.get(f"{tenant.path}/apikeys", headers=bearer(tenant.admin_key))
    (found,) = [key for key in listed.json()["items"] if key["role"] == role]
    return str(found["id"])
