"""Per-IP rate limiting with the `limits` library, plus backoff after authentication failures.

Backoff refuses failing attempts only: while an address is in backoff, a request whose
credential verifies is served, and one that would have been a 401 is answered 429
AUTH_BACKOFF instead (and counted), so clients sharing an address with a guesser (a NAT) keep
working. Webhooks (``/api/v1/webhooks/``) are authenticated by their signature: they have a
budget of their own and are outside the backoff both ways (docs/security.md).

State lives in this process's memory by default (http/ratelimit_memory.py) and in Redis
when TENANTPLANE_REDIS_URL is set, so every API replica shares one budget per client IP.
Client IPs come from the ASGI scope, which uvicorn's ProxyHeadersMiddleware has rewritten
from X-Forwarded-For only for peers in TENANTPLANE_TRUSTED_PROXIES. When the store cannot be
reached, TENANTPLANE_REDIS_FAILURE_POLICY decides each request (http/ratelimit_store.py).

Every answer of a limited path says what is left of the budget it was counted in:
RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (draft-ietf-httpapi-ratelimit-
headers; Reset is the seconds until the window frees a request), so that clients slow down
before a 429. The figures are the `limits` library's own window statistics.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from dataclasses import dataclass
from typing import Any

import structlog
from limits import RateLimitItem, RateLimitItemPerSecond, parse
from limits.aio.storage import Storage
from limits.aio.strategies import MovingWindowRateLimiter
from limits.storage import storage_from_string
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tenantplane.config import Settings
from tenantplane.http.asgi import RATE_LIMIT_HEADERS, StatusRecorder
from tenantplane.http.errors import ApiError
from tenantplane.http.ratelimit_memory import LoopMemoryStorage
from tenantplane.http.ratelimit_store import (
    RETRY_AFTER_SECONDS,
    StoreGuard,
    StoreUnavailable,
    redis_options,
)

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Quota:
    """A budget after this request was counted in it: its size, what is left, and the
    seconds until its moving window frees a request (the oldest one leaves it)."""

    limit: int
    remaining: int
    reset: int

    def headers(self) -> list[tuple[bytes, bytes]]:
        return [
            (b"ratelimit-limit", b"%d" % self.limit),
            (b"ratelimit-remaining", b"%d" % self.remaining),
            (b"ratelimit-reset", b"%d" % self.reset),
        ]


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after: int = 0
    code: str = ""
    status: int = 429
    # None when the store could not be asked (the failure policy decided).
    quota: Quota | None = None
    # Seconds the address stays in authentication backoff (API budget only).
    backoff: int = 0


def _redis_storage(settings: Settings, redis_url: str, key_prefix: str) -> Storage:
    scheme, _, rest = redis_url.partition("://")
    options: dict[str, Any] = {
        "implementation": "redispy",
        "key_prefix": key_prefix,
        **redis_options(settings),
    }
    storage = storage_from_string(f"async+{scheme}://{rest}", **options)
    assert isinstance(storage, Storage)
    return storage


class RateLimiter:
    def __init__(self, settings: Settings, key_prefix: str = "tenantplane") -> None:
        self.storage: Storage = (
            _redis_storage(settings, settings.redis_url, key_prefix)
            if settings.redis_url
            else LoopMemoryStorage()
        )
        self.limiter = MovingWindowRateLimiter(self.storage)
        self.item: RateLimitItem = parse(settings.rate_limit)
        self.webhook_item: RateLimitItem = parse(settings.webhook_rate_limit)
        # Its amount is never reached: only the count within the window matters.
        self.failures = RateLimitItemPerSecond(10_000, settings.auth_failure_window_seconds)
        self.settings = settings
        self.prefix = key_prefix
        # Redis: the window's statistics and the backoff are asked at once, so that the
        # headers cost a request no round trip more than it made without them. In memory
        # there is nothing to wait for, and one after the other is cheaper than two tasks.
        self.concurrent = not isinstance(self.storage, LoopMemoryStorage)

    async def check(self, ip: str) -> Verdict:
        """The API budget of ``ip``, and when it lets the request through, the address's
        remaining backoff."""
        if not await self.limiter.hit(self.item, ip):
            return self._refused(await self._quota(self.item, ip))
        if self.concurrent:
            quota, backoff = await asyncio.gather(
                self._quota(self.item, ip), self.backoff_remaining(ip)
            )
        else:
            quota, backoff = await self._quota(self.item, ip), await self.backoff_remaining(ip)
        return Verdict(True, quota=quota, backoff=backoff)

    async def check_webhook(self, ip: str) -> Verdict:
        """The webhook budget of ``ip``, separate from the API's; no backoff."""
        allowed = await self.limiter.hit(self.webhook_item, "webhook", ip)
        quota = await self._quota(self.webhook_item, "webhook", ip)
        return Verdict(True, quota=quota) if allowed else self._refused(quota)

    async def _quota(self, item: RateLimitItem, *identifiers: str) -> Quota:
        stats = await self.limiter.get_window_stats(item, *identifiers)
        reset = max(0, math.ceil(stats.reset_time - time.time()))
        return Quota(item.amount, max(0, stats.remaining), reset)

    @staticmethod
    def _refused(quota: Quota) -> Verdict:
        return Verdict(False, max(1, quota.reset), "RATE_LIMITED", quota=quota)

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

    async def backoff_remaining(self, ip: str) -> int:
        """Seconds ``ip`` stays in backoff (0: not in backoff)."""
        key = self._key("authblock", ip)
        if await self.storage.get(key) <= 0:
            return 0
        return max(1, math.ceil(await self.storage.get_expiry(key) - time.time()))

    def _key(self, kind: str, ip: str) -> str:
        # The Redis implementation prefixes keys itself; memory keys share one dict.
        return f"{self.prefix}/{kind}/{ip}"

    async def reset(self) -> None:
        await self.storage.reset()


def _refusal(verdict: Verdict) -> ApiError:
    return ApiError(
        verdict.status,
        MESSAGES[verdict.code],
        code=verdict.code,
        headers={"Retry-After": str(verdict.retry_after)},
    )


class QuotaHeaders:
    """A `send` that adds the budget's RateLimit-* headers to the answer, whatever it is."""

    def __init__(self, send: Send, headers: list[tuple[bytes, bytes]]) -> None:
        self.send = send
        self.headers = headers

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *self.headers]}
        await self.send(message)


def _with_quota(scope: Scope, send: Send, verdict: Verdict) -> Send:
    if verdict.quota is None:
        return send
    headers = verdict.quota.headers()
    # For the 500 handler, which answers outside every middleware (http/errors.py).
    scope[RATE_LIMIT_HEADERS] = headers
    return QuotaHeaders(send, headers)


class BackoffGate:
    """A `send` for a request from an address in backoff: a 401 answer (the credential did
    not verify) is replaced by 429 AUTH_BACKOFF; any other answer passes unchanged."""

    def __init__(self, scope: Scope, receive: Receive, send: Send, retry_after: int) -> None:
        self.scope, self.receive, self.send = scope, receive, send
        self.refusal = _refusal(Verdict(False, retry_after, "AUTH_BACKOFF"))
        self.status = 0
        self.replaced = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            if self.status == 401:
                self.replaced = True
                await self.refusal.response()(self.scope, self.receive, self.send)
                return
        if not self.replaced:
            await self.send(message)


class RateLimitMiddleware:
    """Applies the per-IP budget to API routes and records 401 answers as auth failures;
    webhook routes get their own budget and no backoff.

    Every store call goes through ``guard``: while the store is unreachable, the failure
    policy decides the request instead of the budget."""

    def __init__(
        self,
        app: ASGIApp,
        limiter: RateLimiter,
        guard: StoreGuard,
        prefixes: tuple[str, ...],
        webhook_prefixes: tuple[str, ...] = (),
    ) -> None:
        self.app = app
        self.limiter = limiter
        self.guard = guard
        self.prefixes = prefixes
        self.webhook_prefixes = webhook_prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefixes):
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        ip = client[0] if client else "unknown"
        if scope["path"].startswith(self.webhook_prefixes):
            await self._webhook(ip, scope, receive, send)
            return
        verdict = await self._check(ip)
        send = _with_quota(scope, send, verdict)
        if not verdict.allowed:
            await _refusal(verdict).response()(scope, receive, send)
            return
        gate: BackoffGate | StatusRecorder
        if verdict.backoff > 0:
            gate = BackoffGate(scope, receive, send, verdict.backoff)
        else:
            gate = StatusRecorder(send, default=0)
        try:
            await self.app(scope, receive, gate)
        finally:
            if gate.status == 401:
                await self._record_failure(ip)

    async def _webhook(self, ip: str, scope: Scope, receive: Receive, send: Send) -> None:
        """Its own budget; a bad signature is not a guessed API key: it neither counts as an
        authentication failure nor is refused by the address's backoff."""
        verdict = await self._check_webhook(ip)
        send = _with_quota(scope, send, verdict)
        if not verdict.allowed:
            await _refusal(verdict).response()(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _check(self, ip: str) -> Verdict:
        try:
            return await self.guard.call(lambda: self.limiter.check(ip))
        except StoreUnavailable:
            return self._policy_verdict()

    async def _check_webhook(self, ip: str) -> Verdict:
        try:
            return await self.guard.call(lambda: self.limiter.check_webhook(ip))
        except StoreUnavailable:
            return self._policy_verdict()

    def _policy_verdict(self) -> Verdict:
        """The store is unreachable: the failure policy decides the request, without
        backoff, and without RateLimit-* headers (no budget was counted)."""
        if self.guard.decide():
            return Verdict(True)
        return Verdict(False, RETRY_AFTER_SECONDS, "RATE_LIMIT_UNAVAILABLE", status=503)

    async def _record_failure(self, ip: str) -> None:
        # Not recorded while the store is down (the guard logs the outage once).
        with contextlib.suppress(StoreUnavailable):
            await self.guard.call(lambda: self.limiter.record_auth_failure(ip))


MESSAGES = {
    "RATE_LIMITED": "too many requests; retry after the number of seconds in Retry-After",
    "AUTH_BACKOFF": "too many requests; retry after the number of seconds in Retry-After",
    "RATE_LIMIT_UNAVAILABLE": (
        "rate limiting is unavailable, and this deployment refuses requests until it is back; "
        "retry after the number of seconds in Retry-After"
    ),
}
