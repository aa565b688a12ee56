"""The SDK against a real server process: the rate-limit budget each answer reports, and a
304 (the caller's own If-None-Match) taken as an answer, not an error."""

from __future__ import annotations

import pytest

from tenantplane_client import ApiError, AsyncTenantplane, RateLimit, Tenantplane, models
from tests.clients.conftest import Tenant

# The test server's TENANTPLANE_RATE_LIMIT (tests/contract/server.py): 1000000/minute.
SERVER_LIMIT = 1_000_000


def test_the_client_keeps_the_budget_its_last_answer_reported(tenant: Tenant) -> None:
    with Tenantplane(tenant.url, tenant.name, tenant.key) as client:
        assert client.rate_limit is None  # nothing answered yet
        client.get_tenant()
        first = client.rate_limit
        assert isinstance(first, RateLimit)
        assert first.limit == SERVER_LIMIT
        assert 0 <= first.remaining < SERVER_LIMIT
        assert 0 <= first.reset <= 60
        # Error answers report it too.
        with pytest.raises(ApiError) as refused:
            client.clusters.get("nope")
        assert refused.value.status == 404
        after_error = client.rate_limit
        assert after_error is not None
        assert after_error is not first
        assert after_error.limit == SERVER_LIMIT


async def test_the_async_client_keeps_it_too(tenant: Tenant) -> None:
    async with AsyncTenantplane(tenant.url, tenant.name, tenant.key) as client:
        await client.get_tenant()
        assert client.rate_limit is not None
        assert client.rate_limit.limit == SERVER_LIMIT


def test_a_304_is_returned_to_the_caller_that_asked_for_it(tenant: Tenant) -> None:
    with Tenantplane(tenant.url, tenant.name, tenant.key) as client:
        plain = client.request("GET", client.tenant_path)
        etag = plain.headers["ETag"]
        condition = {"If-None-Match": etag}
        answer = client.request("GET", client.tenant_path, headers=condition)
        assert answer.status_code == 304
        assert answer.headers["ETag"] == etag
        assert answer.content == b""
        # A typed call has nothing to parse: None, the caller's copy is current.
        assert client.call(models.TenantRead, "GET", client.tenant_path, headers=condition) is None
        changed = client.request("GET", client.tenant_path, headers={"If-None-Match": '"0"'})
        assert changed.status_code == 200
        assert models.TenantRead.model_validate(changed.json()).name == tenant.name
