"""Redis, the shared rate-limit and auth-backoff store, becomes unreachable: each request is
decided by TENANTPLANE_REDIS_FAILURE_POLICY (open: served without limits; closed: 503), the
outage is logged once (a warning when it starts, an info when Redis is back) and shown in
/metrics and /readyz. A redis-server of the test's own is killed or frozen (SIGSTOP)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.backends import DedicatedRedis, dedicated_redis
from tests.conftest import make_settings
from tests.contract.server import free_port
from tests.factories import Factory
from tests.http_client import BASE_URL, api_client, bearer, running_app

DEADLINE_SECONDS = 60.0
OUTAGE = "rate limit store unreachable"
RECOVERY = "rate limit store reachable again"


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[DedicatedRedis]:
    with dedicated_redis(tmp_path, free_port()) as server:
        yield server


def log_events(captured: str, event: str) -> list[dict[str, object]]:
    records = [json.loads(line) for line in captured.splitlines() if line.startswith("{")]
    return [record for record in records if record.get("event") == event]


def metric(text: str, name: str) -> float:
    [line] = [line for line in text.splitlines() if line.startswith(name + " ")]
    return float(line.split()[-1])


async def until_answered(
    client: httpx.AsyncClient, path: str, key: str, done: Callable[[httpx.Response], bool]
) -> httpx.Response:
    """Ask until an answer satisfies ``done`` (Redis back and consulted again)."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + DEADLINE_SECONDS
    while True:
        response = await client.get(path, headers=bearer(key))
        if done(response):
            return response
        assert loop.time() < give_up, f"never answered as expected; last: {response.text}"
        await asyncio.sleep(0.05)


async def test_open_policy_serves_without_limits_while_redis_is_down(
    database_url: str,
    tmp_path: Path,
    factory: Factory,
    redis_server: DedicatedRedis,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tenant = await factory.tenant()
    settings = make_settings(
        database_url, tmp_path, rate_limit="2/minute", redis_url=redis_server.url
    )
    assert settings.redis_failure_policy == "open"  # the default
    async with (
        running_app(settings) as app,
        api_client(app, ip="198.51.100.20") as client,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as ops,
    ):
        statuses = [
            (await client.get(tenant.path, headers=bearer(tenant.admin_key))).status_code
            for _ in range(3)
        ]
        assert statuses == [200, 200, 429]  # Redis keeps the budget

        redis_server.kill()
        statuses = [
            (await client.get(tenant.path, headers=bearer(tenant.admin_key))).status_code
            for _ in range(5)
        ]
        assert statuses == [200] * 5  # over the budget, yet served: fail open
        ready = await ops.get("/readyz")
        assert ready.status_code == 200
        assert ready.json() == {
            "status": "degraded",
            "checks": {"database": "ok", "redis": "unavailable"},
        }
        metrics = (await ops.get("/metrics")).text
        assert metric(metrics, "tenantplane_redis_up") == 0
        allowed = 'tenantplane_redis_unavailable_requests_total{decision="allowed"}'
        assert metric(metrics, allowed) == 5
        outage_logs = log_events(capsys.readouterr().err, OUTAGE)
        assert len(outage_logs) == 1, outage_logs  # once per outage, not once per request
        assert outage_logs[0]["level"] == "warning"
        assert outage_logs[0]["policy"] == "open"

        redis_server.start()  # an empty Redis on the same port: a fresh budget
        refused = await until_answered(
            client, tenant.path, tenant.admin_key, lambda r: r.status_code == 429
        )
        assert refused.json()["code"] == "RATE_LIMITED"
        ready = await ops.get("/readyz")
        assert ready.json() == {"status": "ready", "checks": {"database": "ok", "redis": "ok"}}
        assert metric((await ops.get("/metrics")).text, "tenantplane_redis_up") == 1
        captured = capsys.readouterr().err
        assert log_events(captured, OUTAGE) == []
        [recovery] = log_events(captured, RECOVERY)
        assert recovery["level"] == "info"
        assert isinstance(recovery["requests_decided_by_policy"], int)
        assert recovery["requests_decided_by_policy"] >= 5


async def test_closed_policy_refuses_with_503_while_redis_is_frozen(
    database_url: str,
    tmp_path: Path,
    factory: Factory,
    redis_server: DedicatedRedis,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tenant = await factory.tenant()
    settings = make_settings(
        database_url,
        tmp_path,
        redis_url=redis_server.url,
        redis_failure_policy="closed",
        redis_timeout_seconds=0.5,
        run_reconcilers=False,
    )
    clusters = f"{tenant.path}/clusters"
    async with (
        running_app(settings) as app,
        api_client(app) as client,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as ops,
    ):
        assert (await client.get(clusters, headers=bearer(tenant.admin_key))).status_code == 200

        # Stopped, not dead: connections are accepted and never answered (a partition or a
        # frozen VM); the client's timeout bounds each try.
        redis_server.freeze()
        for _ in range(3):
            refused = await client.post(
                clusters, json={"name": "dev"}, headers=bearer(tenant.admin_key)
            )
            assert refused.status_code == 503, refused.text
            assert refused.json()["code"] == "RATE_LIMIT_UNAVAILABLE"
            assert refused.headers["Retry-After"] == "5"
        unready = await ops.get("/readyz")
        assert unready.status_code == 503
        assert unready.json()["code"] == "REDIS_UNAVAILABLE"
        assert "redis unavailable" in unready.json()["message"]
        metrics = (await ops.get("/metrics")).text
        assert (
            metric(metrics, 'tenantplane_redis_unavailable_requests_total{decision="refused"}') == 3
        )
        assert metric(metrics, "tenantplane_redis_up") == 0
        assert len(log_events(capsys.readouterr().err, OUTAGE)) == 1

        redis_server.thaw()
        listed = await until_answered(
            client, clusters, tenant.admin_key, lambda r: r.status_code == 200
        )
        assert listed.json()["items"] == []  # the refused creates changed nothing
        assert (await ops.get("/readyz")).json()["status"] == "ready"
        assert len(log_events(capsys.readouterr().err, RECOVERY)) == 1
