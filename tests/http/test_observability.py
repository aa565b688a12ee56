from __future__ import annotations

import json
import random
import string
from pathlib import Path

import httpx
import psycopg
import pytest

from tenantplane.db.engine import Database
from tenantplane.db.urls import libpq_dsn
from tests.cluster.polling import create_cluster, wait_running
from tests.conftest import make_settings
from tests.factories import Factory
from tests.http_client import BASE_URL, api_client, bearer, running_app


async def test_health_and_readiness(client: httpx.AsyncClient) -> None:
    base = str(client.base_url).removesuffix("/api/v1/").removesuffix("/api/v1")
    assert (await client.get(f"{base}/healthz")).json() == {"status": "ok"}
    ready = await client.get(f"{base}/readyz")
    assert ready.status_code == 200
    # No Redis configured: the database is the only check.
    assert ready.json() == {"status": "ready", "checks": {"database": "ok"}}


async def test_the_root_leads_to_the_api_documentation(client: httpx.AsyncClient) -> None:
    # Before: a JSON 404 for someone opening the service's address in a browser.
    base = str(client.base_url).removesuffix("/api/v1/").removesuffix("/api/v1")
    response = await client.get(f"{base}/", follow_redirects=False)
    assert (response.status_code, response.headers["location"]) == (307, "/docs")
    assert (await client.get(f"{base}/docs")).status_code == 200


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


def sample_value(metrics: str, series: str) -> float:
    """The value of one series in a Prometheus text page (fails when it is absent)."""
    [line] = [line for line in metrics.splitlines() if line.startswith(series + " ")]
    return float(line.rsplit(" ", 1)[1])


async def test_metrics_show_the_reconcilers_and_the_runtime(
    database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    settings = make_settings(database_url, tmp_path, reconcile_idle_poll_seconds=0.1)
    async with (
        running_app(settings) as app,
        api_client(app) as client,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as ops,
    ):
        await create_cluster(client, tenant.path, tenant.admin_key, "dev")
        await wait_running(client, tenant.path, tenant.admin_key, "dev")
        metrics = (await ops.get("/metrics")).text
    cluster = '{reconciler="clusters"}'
    # Provisioning took several steps (one per simulator step), none failed.
    assert sample_value(metrics, f"tenantplane_reconcile_steps_total{cluster}") >= 2
    assert sample_value(metrics, f"tenantplane_reconcile_failures_total{cluster}") == 0
    assert sample_value(metrics, f"tenantplane_reconcile_lease_takeovers_total{cluster}") == 0
    assert sample_value(
        metrics, f"tenantplane_reconcile_step_duration_seconds_count{cluster}"
    ) == sample_value(metrics, f"tenantplane_reconcile_steps_total{cluster}")
    # Converged: only its resync is scheduled, nothing is due.
    assert sample_value(metrics, f"tenantplane_reconcile_queue_depth{cluster}") == 0
    for reconciler in ("billing-cycle", "secrets"):  # those this deployment runs
        assert f'tenantplane_reconcile_queue_depth{{reconciler="{reconciler}"}}' in metrics
    # prometheus-client's process and Python collectors, on the app's own registry.
    assert sample_value(metrics, "process_resident_memory_bytes") > 0
    assert 'python_info{implementation="CPython"' in metrics
    assert sample_value(metrics, 'python_gc_collections_total{generation="0"}') >= 0


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_queue_depth_counts_due_rows_no_runner_can_take(
    database: Database, database_url: str, tmp_path: Path, factory: Factory
) -> None:
    """Clusters wait while the table is locked against the fetchers (PostgreSQL: plain reads
    still pass; on SQLite every transaction takes the write lock, readers included). The
    lock is taken before the reconcilers start: taken after, it raced their first fetch,
    which could lease the three rows first."""
    tenant = await factory.tenant()
    paused = make_settings(database_url, tmp_path, run_reconcilers=False)
    async with running_app(paused) as app, api_client(app) as client:
        for name in ("one", "two", "three"):
            await create_cluster(client, tenant.path, tenant.admin_key, name)
    settings = make_settings(database_url, tmp_path, reconcile_idle_poll_seconds=0.1)
    series = 'tenantplane_reconcile_queue_depth{reconciler="clusters"}'
    async with await psycopg.AsyncConnection.connect(libpq_dsn(database_url)) as locking:
        await locking.execute("LOCK TABLE clusters IN EXCLUSIVE MODE")
        async with (
            running_app(settings) as app,
            api_client(app) as client,
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as ops,
        ):
            assert sample_value((await ops.get("/metrics")).text, series) == 3
            await locking.rollback()  # the lock goes: the fetchers take the rows
            for name in ("one", "two", "three"):
                await wait_running(client, tenant.path, tenant.admin_key, name)
            assert sample_value((await ops.get("/metrics")).text, series) == 0
