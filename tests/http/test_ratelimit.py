from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from tests.backends import redis_url
from tests.conftest import make_settings
from tests.factories import Factory
from tests.http_client import api_client, bearer, running_app


async def test_limit_is_per_ip_with_retry_after(
    database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    settings = make_settings(database_url, tmp_path, rate_limit="3/minute")
    async with (
        running_app(settings) as app,
        api_client(app, ip="198.51.100.1") as first,
        api_client(app, ip="198.51.100.2") as second,
    ):
        statuses = [
            (await first.get(tenant.path, headers=bearer(tenant.admin_key))).status_code
            for _ in range(3)
        ]
        assert statuses == [200, 200, 200]
        refused = await first.get(tenant.path, headers=bearer(tenant.admin_key))
        assert refused.status_code == 429
        assert refused.json()["code"] == "RATE_LIMITED"
        retry_after = int(refused.headers["Retry-After"])
        assert 1 <= retry_after <= 60
        # Another client IP has its own budget.
        other = await second.get(tenant.path, headers=bearer(tenant.admin_key))
        assert other.status_code == 200


async def test_operations_endpoints_are_not_rate_make_settings(
    database_url: str, tmp_path: Path, database: object
) -> None:
    settings = make_settings(database_url, tmp_path, rate_limit="1/minute")
    async with running_app(settings) as app:
        transport = httpx.ASGITransport(app=app, client=("198.51.100.9", 1))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            for _ in range(3):
                assert (await client.get("/healthz")).status_code == 200


async def test_forwarded_for_is_honoured_only_from_trusted_proxies(
    database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    settings = make_settings(
        database_url, tmp_path, rate_limit="2/minute", trusted_proxies="10.0.0.0/8"
    )
    async with (
        running_app(settings) as app,
        api_client(app, ip="10.1.2.3") as proxy,
        api_client(app, ip="192.0.2.50") as direct,
    ):
        headers = bearer(tenant.admin_key)
        # Through the trusted proxy, each forwarded client has its own budget.
        for client_ip in ("192.0.2.1", "192.0.2.2"):
            for _ in range(2):
                response = await proxy.get(
                    tenant.path, headers={**headers, "X-Forwarded-For": client_ip}
                )
                assert response.status_code == 200
        over = await proxy.get(tenant.path, headers={**headers, "X-Forwarded-For": "192.0.2.1"})
        assert over.status_code == 429
        # An untrusted peer cannot choose its address by sending the header.
        for spoofed in ("192.0.2.101", "192.0.2.102", "192.0.2.103"):
            response = await direct.get(
                tenant.path, headers={**headers, "X-Forwarded-For": spoofed}
            )
            last = response.status_code
        assert last == 429


async def test_auth_failures_add_growing_backoff_that_resets_after_quiet(
    database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    settings = make_settings(
        database_url,
        tmp_path,
        auth_failure_threshold=2,
        # Blocks of 2 s, then capped at 3 s: room for a loaded machine between requests.
        auth_backoff_base_seconds=2,
        auth_backoff_max_seconds=3,
        auth_failure_window_seconds=5,
    )
    async with running_app(settings) as app, api_client(app, ip="198.51.100.77") as client:
        wrong = {"Authorization": "Bearer svc_" + "B" * 43}
        assert (await client.get(tenant.path, headers=wrong)).status_code == 401
        assert (await client.get(tenant.path, headers=wrong)).status_code == 401
        blocked = await client.get(tenant.path, headers=wrong)
        assert blocked.status_code == 429
        assert blocked.json()["code"] == "AUTH_BACKOFF"
        first_wait = int(blocked.headers["Retry-After"])
        # The backoff has run out: the next failure is answered, and blocks for longer.
        await asyncio.sleep(first_wait + 0.1)
        assert (await client.get(tenant.path, headers=wrong)).status_code == 401
        again = await client.get(tenant.path, headers=wrong)
        assert again.status_code == 429
        second_wait = int(again.headers["Retry-After"])
        assert second_wait > first_wait
        # Quiet for longer than the window: the count and the backoff are gone.
        await asyncio.sleep(second_wait + settings.auth_failure_window_seconds + 0.2)
        assert (await client.get(tenant.path, headers=wrong)).status_code == 401


async def test_backoff_refuses_failing_attempts_only(
    database_url: str, tmp_path: Path, factory: Factory
) -> None:
    """Clients behind one address (a NAT) keep working while a guesser among them is in
    backoff: a credential that verifies is served, one that does not is refused with 429."""
    tenant = await factory.tenant()
    settings = make_settings(database_url, tmp_path, auth_failure_threshold=2)
    async with running_app(settings) as app, api_client(app, ip="198.51.100.78") as client:
        wrong = {"Authorization": "Bearer svc_" + "C" * 43}
        for _ in range(2):
            assert (await client.get(tenant.path, headers=wrong)).status_code == 401
        failing = {
            "unknown key": wrong,
            "no credential": {},
            "malformed": {"Authorization": "Basic abc"},
            "expired key": bearer(await factory.expired_api_key(tenant.id)),
            "revoked key": bearer(await factory.revoked_api_key(tenant.id)),
        }
        for case, headers in failing.items():
            refused = await client.get(tenant.path, headers=headers)
            assert refused.status_code == 429, case
            assert refused.json()["code"] == "AUTH_BACKOFF", case
            assert int(refused.headers["Retry-After"]) >= 1, case
        # A valid key, and a write with it, are served; so is a caller without a role.
        assert (await client.get(tenant.path, headers=bearer(tenant.admin_key))).status_code == 200
        created = await client.post(
            f"{tenant.path}/apikeys",
            headers=bearer(tenant.admin_key),
            json={"displayName": "behind-the-nat", "role": "readonly"},
        )
        assert created.status_code == 201, created.text
        fresh = bearer(created.json()["key"])
        assert (await client.get(f"{tenant.path}/clusters", headers=fresh)).status_code == 200
        forbidden = await client.get(f"{tenant.path}/apikeys", headers=fresh)
        assert forbidden.status_code == 403


async def test_redis_shares_the_budget_between_replicas(
    database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    prefix = f"tenantplane-test-{uuid.uuid4().hex}"
    settings = make_settings(database_url, tmp_path, rate_limit="4/minute", redis_url=redis_url())
    async with (
        running_app(settings, rate_limit_prefix=prefix) as replica_a,
        running_app(settings, rate_limit_prefix=prefix) as replica_b,
    ):
        async with (
            api_client(replica_a, ip="198.51.100.5") as a,
            api_client(replica_b, ip="198.51.100.5") as b,
        ):
            statuses = []
            for client in (a, b, a, b, a, b):
                statuses.append(
                    (await client.get(tenant.path, headers=bearer(tenant.admin_key))).status_code
                )
            assert statuses == [200, 200, 200, 200, 429, 429]
        await replica_a.state.rate_limiter.reset()


async def test_redis_outage_does_not_take_the_api_down(
    database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    settings = make_settings(database_url, tmp_path, redis_url="redis://127.0.0.1:1/0")
    async with running_app(settings) as app, api_client(app) as client:
        response = await client.get(tenant.path, headers=bearer(tenant.admin_key))
        assert response.status_code == 200


class CountingExecutor(ThreadPoolExecutor):
    """A default executor sized as asyncio's own, counting what is handed to it (it stays
    the session loop's default for the tests after this one, unchanged but for the count)."""

    def __init__(self) -> None:
        super().__init__()
        self.submitted = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


async def test_the_in_process_budget_is_kept_on_the_event_loop(
    database_url: str, tmp_path: Path, factory: Factory
) -> None:
    """Without Redis the budget is checked without handing work to a thread: a hand-off per
    request cost about as much CPU as the rest of a poll's rate limiting and access check."""
    tenant = await factory.tenant()
    settings = make_settings(database_url, tmp_path, rate_limit="1000/minute")
    executor = CountingExecutor()
    loop = asyncio.get_running_loop()
    loop.set_default_executor(executor)
    async with running_app(settings) as app, api_client(app, ip="198.51.100.7") as client:
        await client.get(tenant.path, headers=bearer(tenant.admin_key))  # caches filled
        before = executor.submitted
        for _ in range(20):
            answer = await client.get(tenant.path, headers=bearer(tenant.admin_key))
            assert answer.status_code == 200
            await asyncio.sleep(0)  # any expiry pass the hits scheduled runs now
        assert executor.submitted == before
        # Still a moving window with a budget: the 1,000th request is the last one served.
        for _ in range(1000 - 21):
            await app.state.rate_limiter.check("198.51.100.7")
        refused = await client.get(tenant.path, headers=bearer(tenant.admin_key))
        assert refused.status_code == 429
