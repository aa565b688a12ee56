"""When a failed delivery is tried again, when it is given up, and when a failing endpoint is
disabled (docs/webhooks.md, "Retries").

After the n-th failed attempt the next comes ``base * 2**(n-1)`` seconds later (``base``:
TENANTPLANE_WEBHOOK_RETRY_BASE_SECONDS, default 10), at most an hour later, each delay
stretched or shrunk at random by up to 20 % (jitter: the deliveries that failed together
do not all come back together). A delivery is tried until an attempt fails 24 hours or more
after the delivery was made: the schedule covers at least 24 hours. A webhook whose attempts
have all failed for 3 days (``failing_since``) is disabled at its next failed attempt.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

RETRY_WINDOW = timedelta(hours=24)
MAX_DELAY_SECONDS = 3600.0
JITTER = 0.2
DISABLE_AFTER = timedelta(days=3)
# 2**30 times any base is far past the longest delay.
_MAX_DOUBLINGS = 30


def backoff_seconds(failures: int, base: float, draw: float | None = None) -> float:
    """The delay after the ``failures``-th failed attempt in a row; ``draw`` in [0, 1)
    places it in its jitter band (random when None)."""
    nominal = min(base * 2 ** min(failures - 1, _MAX_DOUBLINGS), max(MAX_DELAY_SECONDS, base))
    spread = random.random() if draw is None else draw  # noqa: S311 (jitter, not a secret)
    return float(nominal * (1 - JITTER + 2 * JITTER * spread))


def next_attempt(
    created_at: datetime, now: datetime, failures: int, base: float
) -> datetime | None:
    """When to try a delivery made at ``created_at`` again after its ``failures``-th failed
    attempt, which ended at ``now``; None once the retry window is over (it has failed)."""
    if now - created_at >= RETRY_WINDOW:
        return None
    return now + timedelta(seconds=backoff_seconds(failures, base))


def should_disable(failing_since: datetime, now: datetime) -> bool:
    return now - failing_since >= DISABLE_AFTER
