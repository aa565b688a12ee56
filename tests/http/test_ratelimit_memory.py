"""The in-process store's moving window and counters, as limits' strategies use them."""

from __future__ import annotations

import asyncio
import time

from limits import RateLimitItemPerSecond
from limits.aio.strategies import MovingWindowRateLimiter

from tenantplane.http.ratelimit_memory import LoopMemoryStorage


async def test_a_moving_window_admits_its_amount_then_frees_as_hits_age() -> None:
    storage = LoopMemoryStorage()
    limiter = MovingWindowRateLimiter(storage)
    item = RateLimitItemPerSecond(3, 1)
    assert [await limiter.hit(item, "ip") for _ in range(4)] == [True, True, True, False]
    stats = await limiter.get_window_stats(item, "ip")
    assert stats.remaining == 0
    # The window frees when its oldest hit ages out, within the second.
    assert time.time() < stats.reset_time <= time.time() + 1
    # Another identifier has a budget of its own.
    assert await limiter.hit(item, "other")
    await asyncio.sleep(1.05)
    assert await limiter.hit(item, "ip")
    assert (await limiter.get_window_stats(item, "ip")).remaining == 2


async def test_counters_expire() -> None:
    storage = LoopMemoryStorage()
    assert await storage.incr("block", 0.2) == 1
    assert await storage.incr("block", 5) == 2  # the first expiry stands
    assert await storage.get("block") == 2
    await asyncio.sleep(0.25)
    assert await storage.get("block") == 0
    assert await storage.incr("block", 0.2) == 1


async def test_idle_keys_are_swept() -> None:
    """Addresses that stop sending do not stay in memory: a later hit sweeps them."""
    storage = LoopMemoryStorage()
    limiter = MovingWindowRateLimiter(storage)
    short = RateLimitItemPerSecond(10, 1)
    for address in range(100):
        await limiter.hit(short, f"198.51.100.{address}")
    await storage.incr("authblock", 0.1)
    assert len(storage.windows) == 100
    await asyncio.sleep(1.05)
    storage.next_sweep = 0.0  # the sweep is due (it runs every SWEEP_SECONDS)
    await limiter.hit(short, "203.0.113.1")
    assert list(storage.windows) == [short.key_for("203.0.113.1")]
    assert storage.counters == {}
