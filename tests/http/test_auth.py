from __future__ import annotations

import re

import httpx
import pytest
from fastapi import FastAPI

from tenantplane.http.route_index import api_routes
from tests.factories import Factory
from tests.http_client import bearer


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "Token svc_abc",
        "Bearer svc_" + "A" * 43,  # well-formed but unknown
        "Bearer svc_short",
        "Bearer not a token",
        "bearer",
    ],
)
async def test_missing_or_invalid_credentials_are_401(
    client: httpx.AsyncClient, factory: Factory, header: str | None
) -> None:
    tenant = await factory.tenant()
    headers = {} if header is None else {"Authorization": header}
    response = await client.get(tenant.path, headers=headers)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert set(response.json()) == {"error"}


async def test_scheme_is_case_insensitive(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    response = await client.get(
        tenant.path, headers={"Authorization": f"bearer {tenant.admin_key}"}
    )
    assert response.status_code == 200


async def test_a_key_of_tenant_a_is_403_on_every_path_of_tenant_b(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant_a, tenant_b = await factory.tenant(), await factory.tenant()
    # The console's pages (/console/t/{tenant}/…) take no API key: they are a client of
    # these paths (tests/console).
    tenant_paths = [
        item
        for item in api_routes(app)
        if "{tenant}" in item.path and item.path.startswith("/api/v1/")
    ]
    assert len(tenant_paths) >= 6
    for item in tenant_paths:
        concrete = re.sub(r"\{[a-z_]+\}", "some-name", item.path.replace("{tenant}", tenant_b.name))
        response = await client.request(
            item.method,
            concrete.removeprefix("/api/v1"),
            json={},
            headers=bearer(tenant_a.admin_key),
        )
        assert response.status_code == 403, (item.method, concrete, response.text)
