"""The rate limit's in-process store (no Redis): limits' storage interface, kept on the
event loop.

limits' own asyncio memory storage hands an expiry pass to a thread on nearly every hit, and
its synchronous one starts a timer thread every 10 ms under load: either way the event loop
gives up the GIL to another thread hundreds of times a second, which on a busy server costs
more than the whole check (bench/history.md, round 6). Here a moving window is a deque of
hit times per key, oldest first, trimmed when the key is used; keys left idle are dropped by
a sweep run at most once per ``SWEEP_SECONDS``, on the loop, during a hit.
"""

from __future__ import annotations

import time
from collections import deque

from limits.aio.storage import MovingWindowSupport, Storage

SWEEP_SECONDS = 10.0


class LoopMemoryStorage(Storage, MovingWindowSupport):
    # Built directly by the rate limiter, never from a URI.
    STORAGE_SCHEME = None

    def __init__(self) -> None:
        super().__init__()
        # Hit times, oldest first, with the window they were counted in.
        self.windows: dict[str, tuple[deque[float], float]] = {}
        # Counters (the authentication backoff): value and the time it expires.
        self.counters: dict[str, tuple[int, float]] = {}
        self.next_sweep = time.time() + SWEEP_SECONDS

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return ValueError

    async def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        now = time.time()
        self._sweep(now)
        hits = self._window(key, expiry, now)
        if len(hits) + amount > limit:
            return False
        hits.extend([now] * amount)
        return True

    async def get_moving_window(self, key: str, limit: int, expiry: int) -> tuple[float, int]:
        """The time of the oldest hit still in the window, and how many hits it holds."""
        now = time.time()
        hits = self._window(key, expiry, now)
        return (hits[0] if hits else now), len(hits)

    async def incr(self, key: str, expiry: float, amount: int = 1) -> int:
        now = time.time()
        value, expires = self.counters.get(key, (0, now))
        if expires <= now:
            value, expires = 0, now + expiry
        self.counters[key] = (value + amount, expires)
        return value + amount

    async def get(self, key: str) -> int:
        value, expires = self.counters.get(key, (0, 0.0))
        return value if expires > time.time() else 0

    async def get_expiry(self, key: str) -> float:
        now = time.time()
        _, expires = self.counters.get(key, (0, now))
        return max(expires, now)

    async def check(self) -> bool:
        return True

    async def reset(self) -> int | None:
        cleared = len(self.windows) + len(self.counters)
        self.windows.clear()
        self.counters.clear()
        return cleared

    async def clear(self, key: str) -> None:
        self.windows.pop(key, None)
        self.counters.pop(key, None)

    def _window(self, key: str, expiry: float, now: float) -> deque[float]:
        hits, _ = self.windows.setdefault(key, (deque(), expiry))
        cutoff = now - expiry
        while hits and hits[0] <= cutoff:
            hits.popleft()
        return hits

    def _sweep(self, now: float) -> None:
        if now < self.next_sweep:
            return
        self.next_sweep = now + SWEEP_SECONDS
        for key, (hits, expiry) in list(self.windows.items()):
            if not hits or hits[-1] <= now - expiry:
                del self.windows[key]
        for key, (_, expires) in list(self.counters.items()):
            if expires <= now:
                del self.counters[key]
