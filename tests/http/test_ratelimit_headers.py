"""RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (draft-ietf-httpapi-ratelimit-
headers) on every answer of a rate-limited route, from the in-process store and from
Redis alike."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from tests.backends import redis_url
from tests.conftest import make_settings
from tests.factories import Factory, TenantFixture
from tests.http.test_errors import swapped_database
from tests.http_client import api_client, bearer, running_app

STORES = pytest.mark.parametrize("store", ["memory", "redis"])
WINDOW_SECONDS = 60


@asynccontextmanager
async def limited_app(
    store: str, database_url: str, tmp_path: Path, rate_limit: str, **overrides: object
) -> AsyncIterator[FastAPI]:
    if store == "redis":
        overrides["redis_url"] = redis_url()
    settings = make_settings(database_url, tmp_path, rate_limit=rate_limit, **overrides)
    # Redis keys of this test's own: a budget no other test (or run) has spent.
    async with running_app(settings, rate_limit_prefix=f"test-{uuid.uuid4().hex}") as app:
        try:
            yield app
        finally:
            await app.state.rate_limiter.reset()


def quota(response: httpx.Response) -> tuple[int, int, int]:
    return (
        int(response.headers["RateLimit-Limit"]),
        int(response.headers["RateLimit-Remaining"]),
        int(response.headers["RateLimit-Reset"]),
    )


async def spend(client: httpx.AsyncClient, tenant: TenantFixture, times: int) -> None:
    for _ in range(times):
        answer = await client.get(tenant.path, headers=bearer(tenant.admin_key))
        assert answer.status_code == 200


@STORES
async def test_every_answer_tells_the_budget_left_until_429(
    store: str, database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    async with (
        limited_app(store, database_url, tmp_path, f"5/{WINDOW_SECONDS} seconds") as app,
        api_client(app, ip="198.51.100.31") as client,
        api_client(app, ip="198.51.100.32") as other,
    ):
        headers = bearer(tenant.admin_key)
        first = await client.get(tenant.path, headers=headers)
        assert first.status_code == 200
        limit, remaining, reset = quota(first)
        assert (limit, remaining) == (5, 4)
        assert 1 <= reset <= WINDOW_SECONDS
        # Errors spend the budget and say so: a 404, a 401, a 304.
        missing = await client.get(f"{tenant.path}/clusters/nope", headers=headers)
        assert missing.status_code == 404
        assert quota(missing)[:2] == (5, 3)
        unauthenticated = await client.get(tenant.path)
        assert unauthenticated.status_code == 401
        assert quota(unauthenticated)[:2] == (5, 2)
        not_modified = await client.get(
            tenant.path, headers={**headers, "If-None-Match": first.headers["ETag"]}
        )
        assert not_modified.status_code == 304
        assert quota(not_modified)[:2] == (5, 1)
        last = await client.get(tenant.path, headers=headers)
        assert last.status_code == 200
        assert quota(last)[:2] == (5, 0)
        refused = await client.get(tenant.path, headers=headers)
        assert refused.status_code == 429
        limit, remaining, reset = quota(refused)
        assert (limit, remaining) == (5, 0)
        # The window frees a request when the oldest one leaves it: what Retry-After says.
        assert reset == int(refused.headers["Retry-After"])
        assert 1 <= reset <= WINDOW_SECONDS
        # Another address has a budget of its own.
        assert quota(await other.get(tenant.path, headers=headers))[:2] == (5, 4)


@STORES
async def test_an_address_in_backoff_is_told_its_budget_too(
    store: str, database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    async with (
        limited_app(store, database_url, tmp_path, "100/minute", auth_failure_threshold=1) as app,
        api_client(app, ip="198.51.100.33") as client,
    ):
        wrong = {"Authorization": "Bearer svc_" + "D" * 43}
        assert (await client.get(tenant.path, headers=wrong)).status_code == 401
        blocked = await client.get(tenant.path, headers=wrong)
        assert blocked.status_code == 429
        assert blocked.json()["code"] == "AUTH_BACKOFF"
        assert quota(blocked)[:2] == (100, 98)
        served = await client.get(tenant.path, headers=bearer(tenant.admin_key))
        assert served.status_code == 200
        assert quota(served)[:2] == (100, 97)


@STORES
async def test_webhooks_tell_their_own_budget(
    store: str, database_url: str, tmp_path: Path, factory: Factory
) -> None:
    async with (
        limited_app(
            store, database_url, tmp_path, "100/minute", webhook_rate_limit="7/minute"
        ) as app,
        api_client(app, ip="198.51.100.34") as client,
    ):
        delivered = await client.post("/webhooks/paddle", content=b"{}")
        assert quota(delivered)[:2] == (7, 6)


@STORES
async def test_unlimited_paths_carry_no_rate_limit_headers(
    store: str, database_url: str, tmp_path: Path, factory: Factory
) -> None:
    async with limited_app(store, database_url, tmp_path, "100/minute") as app:
        transport = httpx.ASGITransport(app=app, client=("198.51.100.35", 1))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            health = await client.get("/healthz")
            assert health.status_code == 200
            assert "RateLimit-Limit" not in health.headers


@STORES
async def test_an_unexpected_failure_tells_the_budget_too(
    store: str, database_url: str, tmp_path: Path, factory: Factory
) -> None:
    """The 500 is answered outside every middleware; it still carries the headers."""
    tenant = await factory.tenant()
    # A database without the schema: the route fails, not transiently.
    empty = f"sqlite+aiosqlite:///{tmp_path / 'empty' / 'empty.db'}"
    async with (
        limited_app(store, database_url, tmp_path, "100/minute") as app,
        swapped_database(app, empty),
        api_client(app, ip="198.51.100.36") as client,
    ):
        failed = await client.get(tenant.path, headers=bearer(tenant.admin_key))
        assert failed.status_code == 500
        assert quota(failed)[:2] == (100, 99)


async def test_no_budget_is_told_while_the_store_is_unreachable(
    database_url: str, tmp_path: Path, factory: Factory
) -> None:
    """The failure policy serves the request without counting it: no figures to give."""
    tenant = await factory.tenant()
    settings = make_settings(database_url, tmp_path, redis_url="redis://127.0.0.1:1/0")
    async with running_app(settings) as app, api_client(app, ip="198.51.100.37") as client:
        served = await client.get(tenant.path, headers=bearer(tenant.admin_key))
        assert served.status_code == 200
        assert "RateLimit-Limit" not in served.headers
        assert "RateLimit-Remaining" not in served.headers
