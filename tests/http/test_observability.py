from __future__ import annotations

import json
import random
import string

import httpx
import pytest

from tests.factories import Factory
from tests.http_client import bearer


async def test_health_and_readiness(client: httpx.AsyncClient) -> None:
    base = str(client.base_url).removesuffix("/api/v1/").removesuffix("/api/v1")
    assert (await client.get(f"{base}/healthz")).json() == {"status": "ok"}
    ready = await client.get(f"{base}/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready"}


async def test_metrics_count_requests_by_route_template(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await client.get(tenant.path, headers=bearer(tenant.admin_key))
    await client.get(tenant.path)
    await client.get("/definitely/unknown/path-123")
    base = str(client.base_url).removesuffix("/api/v1/").removesuffix("/api/v1")
    metrics = (await client.get(f"{base}/metrics")).text
    assert (
        'tenantplane_http_requests_total{method="GET",route="/api/v1/tenants/{tenant}",'
        'status="200"} 1.0' in metrics
    )
    assert 'status="401"' in metrics
    assert "tenantplane_http_request_duration_seconds_bucket" in metrics
    assert "path-123" not in metrics  # raw paths never become label values


async def test_logs_are_json_with_request_id_and_never_a_credential(
    client: httpx.AsyncClient, factory: Factory, capsys: pytest.CaptureFixture[str]
) -> None:
    tenant = await factory.tenant()
    response = await client.post(
        f"{tenant.path}/apikeys",
        json={"displayName": "x", "role": "admin"},
        headers=bearer(tenant.admin_key),
    )
    new_key = response.json()["key"]
    await client.get(tenant.path, headers=bearer("svc_" + "Z" * 43))
    captured = capsys.readouterr().err
    lines = [json.loads(line) for line in captured.splitlines() if line.startswith("{")]
    requests = [line for line in lines if line.get("event") == "request"]
    assert {line["request_id"] for line in requests} >= {response.headers["X-Request-Id"]}
    for secret in (tenant.admin_key, new_key, "svc_" + "Z" * 43):
        assert secret not in captured


async def test_unknown_methods_share_one_metrics_label(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    rng = random.Random(20261123)
    methods = {"X" + "".join(rng.choices(string.ascii_uppercase, k=10)) for _ in range(50)}
    assert len(methods) == 50
    for method in methods:
        response = await client.request(method, tenant.path)  # no credentials either
        assert response.status_code in (401, 405)
    await client.request("PATCH", tenant.path)
    await client.request("OPTIONS", tenant.path)
    base = str(client.base_url).removesuffix("/api/v1/").removesuffix("/api/v1")
    metrics = (await client.get(f"{base}/metrics")).text
    for method in methods:
        assert method not in metrics
    requests = [
        line for line in metrics.splitlines() if line.startswith("tenantplane_http_requests_total{")
    ]
    others = [line for line in requests if 'method="other"' in line]
    assert len(others) == 1, others
    assert others[0].endswith(" 50.0")
    assert any('method="PATCH"' in line for line in requests)  # known methods keep their name
    assert any('method="OPTIONS"' in line for line in requests)
