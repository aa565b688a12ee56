"""The per-process cache of API-key lookups: revocation still holds on every replica within
the cache time (at most 1 s), concurrent requests share one lookup, expiry and lastUsedAt
are unchanged by it."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from tenantplane.apikey.cache import CachedKey, KeyCache
from tenantplane.config import Settings
from tenantplane.db.engine import Database
from tests.conftest import make_settings
from tests.factories import Factory
from tests.http_client import api_client, bearer, plain_reads_of, running_app
from tests.statements import statements_sent

CACHE_SECONDS = 0.3


async def test_a_revoked_key_is_refused_by_every_replica_within_the_cache_time(
    database: Database, database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    settings = make_settings(
        database_url, tmp_path, run_reconcilers=False, api_key_cache_seconds=CACHE_SECONDS
    )
    async with (
        running_app(settings) as first,
        running_app(settings) as second,
        api_client(first) as one,
        api_client(second) as two,
    ):
        created = await one.post(
            f"{tenant.path}/apikeys",
            json={"displayName": "poller", "role": "readonly"},
            headers=bearer(tenant.admin_key),
        )
        assert created.status_code == 201, created.text
        key, key_id = created.json()["key"], created.json()["id"]
        clusters = f"{tenant.path}/clusters"
        for replica in (one, two):  # cached by both
            assert (await replica.get(clusters, headers=bearer(key))).status_code == 200
        revoked = await one.delete(
            f"{tenant.path}/apikeys/{key_id}", headers=bearer(tenant.admin_key)
        )
        assert revoked.status_code == 204, revoked.text
        # The replica that revoked it forgets it at once; the other once its entry is due.
        assert (await one.get(clusters, headers=bearer(key))).status_code == 401
        await asyncio.sleep(CACHE_SECONDS)
        refused = await two.get(clusters, headers=bearer(key))
        assert refused.status_code == 401, refused.text


async def test_concurrent_requests_with_one_key_share_one_lookup(
    database: Database, database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    # Used once already, so that no request of the burst records lastUsedAt.
    settings = make_settings(database_url, tmp_path, run_reconcilers=False)
    async with running_app(settings) as app, api_client(app) as client:
        clusters = f"{tenant.path}/clusters"
        assert (await client.get(clusters, headers=bearer(tenant.readonly_key))).status_code == 200
        app.state.key_cache._entries.clear()
        # Authentication looks keys up with plain reads (db/reads.py).
        with plain_reads_of(app, "api_keys") as lookups:
            answers = await asyncio.gather(
                *(client.get(clusters, headers=bearer(tenant.readonly_key)) for _ in range(8))
            )
        assert [answer.status_code for answer in answers] == [200] * 8
        assert len(lookups) == 1, lookups


async def test_a_burst_with_a_key_due_for_lastusedat_writes_it_once(
    database: Database, database_url: str, tmp_path: Path, factory: Factory
) -> None:
    # Each write would hold a pooled connection and queue on the key's row lock: a burst of
    # writes with a new key spent the pool on them (503 DATABASE_UNAVAILABLE).
    tenant = await factory.tenant()
    settings = make_settings(database_url, tmp_path, run_reconcilers=False)
    async with running_app(settings) as app, api_client(app) as client:
        with statements_sent(app.state.database.engine) as statements:
            answers = await asyncio.gather(
                *(
                    client.get(f"{tenant.path}/clusters", headers=bearer(tenant.readonly_key))
                    for _ in range(8)
                )
            )
        writes = [s for s in statements if s.startswith("UPDATE API_KEYS")]
        assert [answer.status_code for answer in answers] == [200] * 8
        assert len(writes) == 1, writes
        keys = await client.get(f"{tenant.path}/apikeys", headers=bearer(tenant.admin_key))
        used = [key for key in keys.json()["items"] if key.get("lastUsedAt")]
        assert len(used) >= 1, keys.json()


async def test_a_wrong_key_is_never_cached(
    database: Database, database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    settings = make_settings(database_url, tmp_path, run_reconcilers=False)
    async with running_app(settings) as app, api_client(app) as client:
        wrong = "svc_" + "x" * 43
        answer = await client.get(f"{tenant.path}/clusters", headers=bearer(wrong))
        assert answer.status_code == 401
        assert app.state.key_cache._entries == {}


def test_the_cache_time_is_at_most_one_second(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        Settings(data_dir=tmp_path, api_key_cache_seconds=1.5)


async def test_a_cancelled_shared_lookup_leaves_its_waiters_to_look_up_themselves() -> None:
    cache: KeyCache[str] = KeyCache(0.5)
    started, release = asyncio.Event(), asyncio.Event()
    found = CachedKey("identity", "key-id", None, None, b"hash", "derivation")

    async def slow() -> CachedKey[str] | None:
        started.set()
        await release.wait()
        return found

    async def quick() -> CachedKey[str] | None:
        return found

    leader = asyncio.create_task(cache.load(b"digest", slow))
    await started.wait()
    waiter = asyncio.create_task(cache.load(b"digest", quick))
    await asyncio.sleep(0)
    leader.cancel()
    assert await waiter == found
    with pytest.raises(asyncio.CancelledError):
        await leader


async def test_a_busy_key_is_refreshed_by_one_request_while_the_others_are_served() -> None:
    """Past half its life an entry is looked up again by one request; the others keep using
    it meanwhile instead of all waiting at its expiry for a lookup queued behind their own
    reads."""
    cache: KeyCache[str] = KeyCache(0.2)
    first = CachedKey("identity", "key-id", None, None, b"hash", "derivation")
    renewed = replace(first, value="renewed")
    started, release = asyncio.Event(), asyncio.Event()
    lookups = 0

    async def slow() -> CachedKey[str] | None:
        nonlocal lookups
        lookups += 1
        started.set()
        await release.wait()
        return renewed

    async def never() -> CachedKey[str] | None:
        raise AssertionError("served from the cache, no lookup")

    async def initial() -> CachedKey[str] | None:
        return first

    assert await cache.load(b"digest", initial) == first
    assert await cache.load(b"digest", never) == first  # young: served
    await asyncio.sleep(0.11)  # past half its life
    refresher = asyncio.create_task(cache.load(b"digest", slow))
    await asyncio.wait_for(started.wait(), 1)
    # While the refresh is in flight, everyone else is served the entry without waiting.
    assert [await cache.load(b"digest", never) for _ in range(5)] == [first] * 5
    release.set()
    assert await refresher == renewed
    assert lookups == 1
    assert await cache.load(b"digest", never) == renewed


async def test_a_refresh_that_finds_the_key_gone_drops_it_at_once() -> None:
    cache: KeyCache[str] = KeyCache(0.2)
    found = CachedKey("identity", "key-id", None, None, b"hash", "derivation")

    async def initial() -> CachedKey[str] | None:
        return found

    async def revoked() -> CachedKey[str] | None:
        return None

    await cache.load(b"digest", initial)
    await asyncio.sleep(0.11)
    assert await cache.load(b"digest", revoked) is None
    assert await cache.load(b"digest", revoked) is None


async def test_an_entry_counts_its_age_from_the_start_of_its_lookup() -> None:
    """A slow lookup does not extend the time a revoked key may still be served."""
    cache: KeyCache[str] = KeyCache(0.2)
    found = CachedKey("identity", "key-id", None, None, b"hash", "derivation")

    async def slow() -> CachedKey[str] | None:
        await asyncio.sleep(0.15)
        return found

    async def revoked() -> CachedKey[str] | None:
        return None

    await cache.load(b"digest", slow)
    await asyncio.sleep(0.06)  # 0.21 s after the lookup began: expired
    assert await cache.load(b"digest", revoked) is None
