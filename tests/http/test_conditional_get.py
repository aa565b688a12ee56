"""Conditional GET (RFC 9110 §13.1.2): If-None-Match naming the current ETag is answered
304, on every read that sends an ETag, found from the app's own routes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tenantplane.http.openapi import API_PREFIX
from tenantplane.http.route_index import api_routes
from tests.billing.conftest import BillingFactoryFn, billing, plans_file  # noqa: F401
from tests.factories import Factory
from tests.http.every_resource import concrete_path, create_everything
from tests.http_client import bearer

# Reads that answer something else than 200 for the resources made here, and why.
NOT_READABLE_HERE = {
    # The cluster is not provisioned (no reconcilers run): 503 until it is.
    "/tenants/{tenant}/clusters/{name}/connection-details": 503,
    # The invoices are Draft: nothing charged yet, no receipt.
    "/tenants/{tenant}/invoices/{name}/receipt": 409,
}


def _reads(app: FastAPI) -> list[str]:
    return sorted(
        item.path.removeprefix(API_PREFIX)
        for item in api_routes(app)
        if item.method == "GET" and item.path.startswith(API_PREFIX + "/")
    )


def _documented_as_conditional(app: FastAPI) -> set[str]:
    document: dict[str, Any] = app.openapi()
    return {
        path.removeprefix(API_PREFIX)
        for path, operations in document["paths"].items()
        if "304" in operations.get("get", {}).get("responses", {})
    }


async def _check_conditional(
    client: httpx.AsyncClient, path: str, headers: dict[str, str], plain: httpx.Response
) -> None:
    etag = plain.headers["ETag"]
    for if_none_match in (
        etag,
        f"W/{etag}",  # weak comparison: W/ does not matter
        f'"not-it", {etag}',
        f'"a,b" , W/{etag} ,"c"',
        "*",
    ):
        answer = await client.get(path, headers={**headers, "If-None-Match": if_none_match})
        assert answer.status_code == 304, (path, if_none_match, answer.status_code)
        assert answer.headers["ETag"] == etag, path
        assert answer.content == b"", path
        assert "content-type" not in answer.headers, path
    for other in ('"not-it"', f'"{etag}"', 'W/"x", "y"'):
        answer = await client.get(path, headers={**headers, "If-None-Match": other})
        assert answer.status_code == 200, (path, other)
        assert answer.content == plain.content, path
        assert answer.headers["ETag"] == etag, path


async def test_every_read_with_an_etag_answers_304_to_its_current_etag(
    billing: BillingFactoryFn,  # noqa: F811
    factory: Factory,
) -> None:
    deployment = await billing()
    tenant = await factory.tenant()
    await create_everything(deployment, factory, tenant)
    headers = bearer(tenant.admin_key)
    with_etag: set[str] = set()
    for template in _reads(deployment.app):
        path = await concrete_path(deployment.client, template, tenant, headers)
        plain = await deployment.client.get(path, headers=headers)
        expected = NOT_READABLE_HERE.get(template, 200)
        assert plain.status_code == expected, (template, plain.text)
        if "ETag" not in plain.headers:
            # Without a validator there is nothing to compare: the condition is ignored.
            ignored = await deployment.client.get(path, headers={**headers, "If-None-Match": "*"})
            assert ignored.status_code == expected, template
            continue
        with_etag.add(template)
        await _check_conditional(deployment.client, path, headers, plain)
    assert "/tenants/{tenant}/clusters/{name}" in with_etag
    # The OpenAPI document names 304 on exactly the reads that send an ETag.
    assert with_etag == _documented_as_conditional(deployment.app)


@pytest.mark.parametrize("method", ["PATCH", "DELETE"])
async def test_if_none_match_does_not_turn_a_write_into_304(
    billing: BillingFactoryFn,  # noqa: F811
    factory: Factory,
    method: str,
) -> None:
    deployment = await billing()
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    created = await deployment.client.post(
        f"{tenant.path}/secrets", json={"name": "db", "secretPath": "apps/db"}, headers=headers
    )
    etag = created.headers["ETag"]
    body: dict[str, list[str]] | None = {"sync": []} if method == "PATCH" else None
    answer = await deployment.client.request(
        method,
        f"{tenant.path}/secrets/db",
        json=body,
        headers={**headers, "If-None-Match": etag},
    )
    assert answer.status_code in (200, 204), answer.text
    assert (
        await deployment.client.get(f"{tenant.path}/secrets/db", headers=headers)
    ).status_code == (200 if method == "PATCH" else 404)
