"""Location on every 201: the created resource's absolute URL, from the scheme and host the
client used (as seen through trusted proxies only), replays included."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

from tenantplane.http.openapi import API_PREFIX
from tests.billing.conftest import BillingFactoryFn, billing, plans_file  # noqa: F401
from tests.conftest import make_settings
from tests.factories import Factory
from tests.http.every_resource import create_everything
from tests.http_client import BASE_URL, api_client, bearer, running_app

PROXY = "10.1.2.3"
CLUSTER = {"name": "prod"}


def _creating_operations(app: FastAPI) -> dict[tuple[str, str], re.Pattern[str]]:
    """Every operation the OpenAPI document says may answer 201, with a pattern of its path."""
    document: dict[str, Any] = app.openapi()
    found = {}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if "201" in operation.get("responses", {}):
                pattern = re.sub(r"\{[^}]+\}", "[^/]+", path)
                found[(method.upper(), path)] = re.compile(f"^{pattern}$")
    return found


async def test_every_201_names_the_created_resource_by_its_absolute_url(
    billing: BillingFactoryFn,  # noqa: F811
    factory: Factory,
) -> None:
    deployment = await billing()
    tenant = await factory.tenant()
    answers = await create_everything(deployment, factory, tenant)
    tenant_url = f"{BASE_URL}{API_PREFIX}{tenant.path}"
    for made, response in answers:
        assert response.headers.get("Location") == f"{tenant_url}{made}", made
        read = await deployment.client.get(
            response.headers["Location"], headers=bearer(tenant.admin_key)
        )
        assert read.status_code == 200, made
    # Every operation documented as creating was exercised above, and documents Location.
    creating = _creating_operations(deployment.app)
    for (method, path), pattern in creating.items():
        assert any(
            response.request.method == method and pattern.match(response.request.url.path)
            for _, response in answers
        ), f"{method} {path} answers 201: make one in create_everything"
        operation = deployment.app.openapi()["paths"][path][method.lower()]
        assert "Location" in operation["responses"]["201"]["headers"], (method, path)


async def test_location_follows_trusted_proxies_only(
    database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    settings = make_settings(database_url, tmp_path, trusted_proxies="10.0.0.0/8")
    forwarded = {
        **bearer(tenant.admin_key),
        "X-Forwarded-Proto": "https",
        "X-Forwarded-Host": "api.example.com",
        "X-Forwarded-For": "192.0.2.7",
    }
    async with (
        running_app(settings) as app,
        api_client(app, ip=PROXY) as proxy,
        api_client(app, ip="192.0.2.50") as direct,
    ):
        through = await proxy.post(
            f"{tenant.path}/clusters", json={"name": "one"}, headers=forwarded
        )
        assert through.status_code == 201, through.text
        assert through.headers["Location"] == (
            f"https://api.example.com{API_PREFIX}{tenant.path}/clusters/one"
        )
        # A port comes with the host; the nearest proxy's value (the last one) counts.
        chained = await proxy.post(
            f"{tenant.path}/clusters",
            json={"name": "two"},
            headers={**forwarded, "X-Forwarded-Host": "client.example, edge.example.com:8443"},
        )
        assert chained.headers["Location"] == (
            f"https://edge.example.com:8443{API_PREFIX}{tenant.path}/clusters/two"
        )
        # An untrusted peer cannot choose the host or scheme of the URL.
        spoofed = await direct.post(
            f"{tenant.path}/clusters", json={"name": "three"}, headers=forwarded
        )
        assert spoofed.headers["Location"] == f"{BASE_URL}{API_PREFIX}{tenant.path}/clusters/three"
        # A value that is not a host is ignored, even from a trusted proxy.
        for bad in ("evil.example/path", "a b", "evil.example@x", ""):
            name = f"bad-{len(bad)}"
            answer = await proxy.post(
                f"{tenant.path}/secrets",
                json={"name": name, "secretPath": "apps/db"},
                headers={**forwarded, "X-Forwarded-Host": bad},
            )
            assert answer.status_code == 201, (bad, answer.text)
            assert answer.headers["Location"] == (
                f"https://tenantplane.test{API_PREFIX}{tenant.path}/secrets/{name}"
            ), bad


async def test_a_replay_names_the_resource_as_the_repeat_reaches_it(
    database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    settings = make_settings(database_url, tmp_path, trusted_proxies="10.0.0.0/8")
    headers = {**bearer(tenant.admin_key), "Idempotency-Key": '"one-cluster"'}
    async with running_app(settings) as app:
        async with api_client(app, ip=PROXY) as proxy:
            first = await proxy.post(
                f"{tenant.path}/clusters",
                json=CLUSTER,
                headers={
                    **headers,
                    "X-Forwarded-Proto": "https",
                    "X-Forwarded-Host": "api.example.com",
                },
            )
        assert first.status_code == 201, first.text
        assert first.headers["Location"].startswith("https://api.example.com/")
        transport = httpx.ASGITransport(app=app, client=("192.0.2.9", 1))
        async with httpx.AsyncClient(
            transport=transport, base_url="http://internal.example:8080/api/v1"
        ) as inside:
            repeat = await inside.post(f"{tenant.path}/clusters", json=CLUSTER, headers=headers)
        assert repeat.status_code == 201, repeat.text
        assert repeat.headers["Idempotent-Replayed"] == "true"
        assert repeat.headers["Location"] == (
            f"http://internal.example:8080{API_PREFIX}{tenant.path}/clusters/prod"
        )
