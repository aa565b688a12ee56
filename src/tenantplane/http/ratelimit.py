"""Per-IP rate limiting with the `limits` library, plus backoff after authentication failures.

State lives in memory by default and in Redis when TENANTPLANE_REDIS_URL is set, so every
API replica shares one budget per client IP. Client IPs come from the ASGI scope, which
uvicorn's ProxyHeadersMiddleware has rewritten from X-Forwarded-For only for peers in
TENANTPLANE_TRUSTED_PROXIES.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import structlog
from limits import RateLimitItem, RateLimitItemPerSecond, parse
from limits.aio.storage import Storage
from limits.aio.strategies import MovingWindowRateLimiter
from limits.storage import storage_from_string
from starlette.types import ASGIApp, Receive, Scope, Send

from tenantplane.config import Settings
from tenantplane.http.asgi import StatusRecorder
from tenantplane.http.errors import ApiError

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after: int = 0
    code: str = ""


def _storage_uri(redis_url: str | None) -> str:
    if not redis_url:
        return "async+memory://"
    scheme, _, rest = redis_url.partition("://")
    return f"async+{scheme}://{rest}"


class RateLimiter:
    def __init__(self, settings: Settings, key_prefix: str = "tenantplane") -> None:
        options: dict[str, str] = {}
        if settings.redis_url:
            options = {"implementation": "redispy", "key_prefix": key_prefix}
        storage = storage_from_string(_storage_uri(settings.redis_url), **options)
        assert isinstance(storage, Storage)
        self.storage = storage
        self.limiter = MovingWindowRateLimiter(self.storage)
        self.item: RateLimitItem = parse(settings.rate_limit)
        # Its amount is never reached: only the count within the window matters.
        self.failures = RateLimitItemPerSecond(10_000, settings.auth_failure_window_seconds)
        self.settings = settings
        self.prefix = key_prefix

    async def check(self, ip: str) -> Verdict:
        blocked_for = await self._backoff_remaining(ip)
        if blocked_for > 0:
            return Verdict(False, blocked_for, "AUTH_BACKOFF")
        if await self.limiter.hit(self.item, ip):
            return Verdict(True)
        stats = await self.limiter.get_window_stats(self.item, ip)
        return Verdict(False, max(1, math.ceil(stats.reset_time - time.time())), "RATE_LIMITED")

    async def record_auth_failure(self, ip: str) -> None:
        """Count the failure in a moving window; past the threshold, block the IP for a
        period that doubles with every further failure. After a window with no failures
        the count is back to zero, and so is the backoff."""
        await self.limiter.hit(self.failures, "authfail", ip)
        stats = await self.limiter.get_window_stats(self.failures, "authfail", ip)
        failures = self.failures.amount - stats.remaining
        excess = failures - self.settings.auth_failure_threshold
        if excess < 0:
            return
        backoff = min(
            self.settings.auth_backoff_base_seconds * 2 ** min(excess, 32),
            self.settings.auth_backoff_max_seconds,
        )
        await self.storage.incr(self._key("authblock", ip), backoff)

    async def _backoff_remaining(self, ip: str) -> int:
        key = self._key("authblock", ip)
        if await self.storage.get(key) <= 0:
            return 0
        return max(1, math.ceil(await self.storage.get_expiry(key) - time.time()))

    def _key(self, kind: str, ip: str) -> str:
        # The Redis implementation prefixes keys itself; memory keys share one dict.
        return f"{self.prefix}/{kind}/{ip}"

    async def reset(self) -> None:
        await self.storage.reset()


class RateLimitMiddleware:
    """Applies the per-IP budget to API routes and records 401 answers as auth failures."""

    def __init__(self, app: ASGIApp, limiter: RateLimiter, prefixes: tuple[str, ...]) -> None:
        self.app = app
        self.limiter = limiter
        self.prefixes = prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefixes):
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        ip = client[0] if client else "unknown"
        verdict = await self._check(ip)
        if not verdict.allowed:
            error = ApiError(
                429,
                "too many requests; retry after the number of seconds in Retry-After",
                code=verdict.code,
                headers={"Retry-After": str(verdict.retry_after)},
            )
            await error.response()(scope, receive, send)
            return
        recorder = StatusRecorder(send, default=0)
        try:
            await self.app(scope, receive, recorder)
        finally:
            if recorder.status == 401:
                await self._record_failure(ip)

    async def _check(self, ip: str) -> Verdict:
        try:
            return await self.limiter.check(ip)
        except Exception:
            # Availability over limiting: a rate-limit store outage must not take the API down.
            log.exception("rate limit storage unavailable; allowing request")
            return Verdict(True)

    async def _record_failure(self, ip: str) -> None:
        try:
            await self.limiter.record_auth_failure(ip)
        except Exception:
            log.exception("rate limit storage unavailable; auth failure not recorded")
