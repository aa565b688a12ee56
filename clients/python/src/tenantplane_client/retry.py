"""The spec's retry guidance, as a policy both clients apply to every request.

- 429: wait Retry-After (seconds), then retry.
- 500, 503, and a connection that failed or dropped: exponential backoff with full jitter,
  from ``base_delay`` (1 s) doubling up to ``max_delay`` (30 s).
- At most ``max_attempts`` (5) attempts in all.
- Only requests that are safe to repeat: GET, HEAD, PUT (the API's PUTs are upserts),
  DELETE, PATCH with If-Match, and POST with an Idempotency-Key (which the SDK sets on
  every POST unless told not to).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

SAFE_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE"})


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 5
    base_delay: float = 1.0
    max_delay: float = 30.0
    # Uniform in [0, 1): the jitter's source (injectable for tests).
    random: Callable[[], float] = field(default=random.random)

    def backoff(self, attempt: int) -> float:
        """Full jitter: uniform in [0, min(max_delay, base_delay * 2**(attempt - 1)))."""
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        return self.random() * ceiling

    def delay(self, attempt: int, status: int | None, retry_after: float | None) -> float:
        if status == 429 and retry_after is not None:
            return min(retry_after, self.max_delay)
        return self.backoff(attempt)


def retry_safe(method: str, headers: Mapping[str, str]) -> bool:
    names = {name.lower() for name in headers}
    method = method.upper()
    if method in SAFE_METHODS:
        return True
    if method == "PATCH":
        return "if-match" in names
    if method == "POST":
        return "idempotency-key" in names
    return False


NO_RETRIES = RetryPolicy(max_attempts=1)
