"""Whether the rate-limit store (Redis when TENANTPLANE_REDIS_URL is set) answers, and what
happens to requests while it does not.

Every call the rate limiter makes to its store goes through ``StoreGuard.call``. A failure
marks the store down: one warning is logged for the outage (not one per request), the
``tenantplane_redis_up`` gauge drops to 0, and callers get ``StoreUnavailable``, which the
middleware turns into the TENANTPLANE_REDIS_FAILURE_POLICY's answer (serve without limits,
or 503). While the store is down, calls fail at once without touching it, except one probe
per ``PROBE_INTERVAL_SECONDS``: requests do not each wait for a timeout. The first call
that succeeds again ends the outage with one info line.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import structlog
from limits.aio.storage import Storage
from prometheus_client import CollectorRegistry, Counter, Gauge
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from tenantplane.config import Settings

log = structlog.get_logger(__name__)

T = TypeVar("T")

# While the store is down, at most one call per interval tries it again.
PROBE_INTERVAL_SECONDS = 1.0
# What a refused request (policy "closed") is told to wait.
RETRY_AFTER_SECONDS = 5


class StoreUnavailable(Exception):
    """The rate-limit store cannot be used now; the failure policy decides the request."""


def redis_options(settings: Settings) -> dict[str, Any]:
    """Client options that bound what an unreachable Redis costs one call."""
    return {
        "socket_timeout": settings.redis_timeout_seconds,
        "socket_connect_timeout": settings.redis_timeout_seconds,
        # One immediate retry reconnects after a dropped connection (a Redis restart); more
        # would multiply the timeout for every call during an outage.
        "retry": Retry(NoBackoff(), 1),
    }


class StoreGuard:
    def __init__(self, settings: Settings, registry: CollectorRegistry) -> None:
        self.policy = settings.redis_failure_policy
        self.store = "redis" if settings.redis_url else "memory"
        self._down_since: float | None = None
        self._next_probe = 0.0
        self._decided_in_outage = 0
        self._up: Gauge | None = None
        if settings.redis_url:
            self._up = Gauge(
                "tenantplane_redis_up",
                "1 while Redis (rate limit and auth backoff state) answers, 0 during an outage.",
                registry=registry,
                # serve --workers N: as the process that last probed Redis or saw it change
                # found it (the one answering a scrape probes first).
                multiprocess_mode="mostrecent",
            )
            self._up.set(1)
        self._decisions = Counter(
            "tenantplane_redis_unavailable_requests",
            "Requests decided by TENANTPLANE_REDIS_FAILURE_POLICY because the rate-limit "
            "store was unreachable, by decision (allowed: served without limits; refused: 503).",
            ["decision"],
            registry=registry,
        )
        for decision in ("allowed", "refused"):
            self._decisions.labels(decision)

    @property
    def available(self) -> bool:
        return self._down_since is None

    async def call(self, operation: Callable[[], Awaitable[T]]) -> T:
        """Run one store operation, or raise ``StoreUnavailable``."""
        now = time.monotonic()
        if self._down_since is not None:
            if now < self._next_probe:
                raise StoreUnavailable(self.store)
            # This call is the probe; the others keep failing fast until it is answered.
            self._next_probe = now + PROBE_INTERVAL_SECONDS
        try:
            result = await operation()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.failed(exc)
            raise StoreUnavailable(self.store) from exc
        self.succeeded()
        return result

    async def probe(self, storage: Storage) -> bool:
        """Ask the store itself (readiness, metrics scrapes); records what it finds."""
        if await storage.check():
            self.succeeded()
            if self._up is not None:
                # Written again even when unchanged: with several processes the gauge shows
                # the most recent write, which may be another process's from an outage.
                self._up.set(1)
            return True
        self.failed(None)
        return False

    def failed(self, error: Exception | None) -> None:
        now = time.monotonic()
        self._next_probe = now + PROBE_INTERVAL_SECONDS
        if self._down_since is not None:
            return
        self._down_since = now
        self._decided_in_outage = 0
        if self._up is not None:
            self._up.set(0)
        log.warning(
            "rate limit store unreachable",
            store=self.store,
            policy=self.policy,
            requests="served without rate limit" if self.policy == "open" else "refused (503)",
            error=repr(error) if error is not None else "no answer to a ping",
        )

    def succeeded(self) -> None:
        if self._down_since is None:
            return
        outage = time.monotonic() - self._down_since
        self._down_since = None
        if self._up is not None:
            self._up.set(1)
        log.info(
            "rate limit store reachable again",
            store=self.store,
            outage_seconds=round(outage, 1),
            requests_decided_by_policy=self._decided_in_outage,
        )

    def decide(self) -> bool:
        """The policy's decision for one request while the store is down (True: serve it)."""
        allowed = self.policy == "open"
        self._decided_in_outage += 1
        self._decisions.labels("allowed" if allowed else "refused").inc()
        return allowed
