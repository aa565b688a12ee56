"""A method a path does not serve is a 405 in the envelope whose Allow header lists every
method the path does serve, however many routes serve them."""

from __future__ import annotations

import httpx
import pytest

from tests.factories import Factory
from tests.http_client import bearer


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/tenants/{tenant}/clusters", {"GET", "HEAD", "POST"}),
        ("POST", "/tenants/{tenant}/clusters/alpha", {"GET", "HEAD", "PATCH", "DELETE"}),
        ("PATCH", "/tenants/{tenant}/apikeys/ak-x", {"GET", "HEAD", "DELETE"}),
        ("DELETE", "/tenants/{tenant}/alerting/route", {"GET", "HEAD", "PUT"}),
    ],
)
async def test_405_allow_lists_every_method_of_the_path(
    client: httpx.AsyncClient, factory: Factory, method: str, path: str, allowed: set[str]
) -> None:
    tenant = await factory.tenant()
    response = await client.request(
        method, path.format(tenant=tenant.name), headers=bearer(tenant.admin_key), json={}
    )
    assert response.status_code == 405
    assert response.json()["code"] == "METHOD_NOT_ALLOWED"
    assert {m.strip() for m in response.headers["Allow"].split(",")} == allowed
