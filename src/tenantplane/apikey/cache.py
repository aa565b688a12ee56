"""A short-lived, single-flight cache of API-key lookups, one per process.

Polling clients present the same key many times a second; each presentation would cost a
database query. An entry lives ``TENANTPLANE_API_KEY_CACHE_SECONDS`` (at most 1 s), so a key
revoked on any replica is refused by every replica within that time without any message
between them; the replica that revokes it forgets it at once. Concurrent requests with a key
that is not cached share one lookup. Expiry is checked on every use, and ``lastUsedAt`` still
reaches the database once per resolution window (a due entry is looked up again).

An entry's age counts from the start of the lookup that made it. Past half its life, the
first request to use it looks it up again while every other request is still served from it:
a key in steady use never expires under its callers, who would otherwise all wait, once
every cache time, for one lookup queued behind their own reads in the plain-read pool. A
refresh that finds the key gone drops it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

T = TypeVar("T")


class LookupAbandoned(Exception):
    """The shared lookup's own request ended (cancelled) before the lookup did."""


@dataclass(frozen=True)
class CachedKey(Generic[T]):
    """What authentication needs again: the identity and the times it is checked against."""

    value: T
    key_id: str
    expires_at: datetime | None
    last_used_at: datetime | None
    # The stored hash and how it was made: one other than the current way is re-hashed.
    key_hash: bytes
    derivation: str


@dataclass
class _Entry(Generic[T]):
    key: CachedKey[T]
    fetched_at: float


class KeyCache(Generic[T]):
    def __init__(self, ttl_seconds: float, max_entries: int = 10_000) -> None:
        self.ttl_seconds = ttl_seconds
        self.max_entries = max_entries
        self._entries: dict[bytes, _Entry[T]] = {}
        self._inflight: dict[bytes, asyncio.Future[CachedKey[T] | None]] = {}
        self._recording: set[str] = set()

    @property
    def enabled(self) -> bool:
        return self.ttl_seconds > 0

    async def load(
        self, digest: bytes, lookup: Callable[[], Awaitable[CachedKey[T] | None]]
    ) -> CachedKey[T] | None:
        """The key under ``digest``: cached, or looked up once for all concurrent callers.
        A failed shared lookup makes each waiter look up on its own (its own error)."""
        if not self.enabled:
            return await lookup()
        pending = self._inflight.get(digest)
        entry = self._entries.get(digest)
        if entry is not None:
            age = time.monotonic() - entry.fetched_at
            if age < self.ttl_seconds / 2 or (age < self.ttl_seconds and pending is not None):
                return entry.key
            if age < self.ttl_seconds:
                return await self._look_up(digest, lookup)  # a refresh; the others are served
            del self._entries[digest]
        if pending is not None:
            try:
                return await asyncio.shield(pending)
            except Exception:
                return await lookup()
        return await self._look_up(digest, lookup)

    async def _look_up(
        self, digest: bytes, lookup: Callable[[], Awaitable[CachedKey[T] | None]]
    ) -> CachedKey[T] | None:
        """Look the key up for every caller that waits meanwhile, and keep what is found."""
        future: asyncio.Future[CachedKey[T] | None] = asyncio.get_running_loop().create_future()
        self._inflight[digest] = future
        started = time.monotonic()
        try:
            found = await lookup()
        except BaseException as exc:
            # A cancelled leader (its client went away) must not cancel the waiters: they
            # get an ordinary error and look up on their own.
            future.set_exception(exc if isinstance(exc, Exception) else LookupAbandoned())
            future.exception()  # retrieved: no "never retrieved" warning without waiters
            raise
        else:
            future.set_result(found)
            if found is None:
                self._entries.pop(digest, None)
            else:
                self._keep(digest, found, started)
            return found
        finally:
            del self._inflight[digest]

    async def record_use(self, key_id: str, record: Callable[[], Awaitable[None]]) -> None:
        """Run ``record`` (the ``lastUsedAt`` write) unless one for this key is already under
        way in this process: that one records a use in the same resolution window. Without
        this, a burst of requests with a key not recorded for a while made one write each,
        every one holding a pooled connection and queueing on the key's row lock."""
        if key_id in self._recording:
            return
        self._recording.add(key_id)
        try:
            await record()
        finally:
            self._recording.discard(key_id)

    def _keep(self, digest: bytes, key: CachedKey[T], fetched_at: float) -> None:
        """Keep ``key``, as read at ``fetched_at`` (``time.monotonic()``)."""
        if digest not in self._entries and len(self._entries) >= self.max_entries:
            # Oldest first (insertion order): entries are short-lived anyway.
            self._entries.pop(next(iter(self._entries)))
        self._entries[digest] = _Entry(key, fetched_at)

    def amend(self, digest: bytes, key: CachedKey[T]) -> None:
        """Replace what is kept under ``digest`` (its use just recorded), keeping its age: a
        use does not extend the time a revoked key may still be served."""
        entry = self._entries.get(digest)
        if entry is not None:
            entry.key = key

    def forget(self, key_id: str) -> None:
        """Drop every entry of this key (revoked here: refused at once by this process)."""
        for digest in [d for d, e in self._entries.items() if e.key.key_id == key_id]:
            del self._entries[digest]
