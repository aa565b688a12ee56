"""The retry schedule: exponential from the configured base, jittered, at most an hour
apart, and at least 24 hours long; and when an endpoint is disabled."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tenantplane.event.webhook.schedule import (
    DISABLE_AFTER,
    MAX_DELAY_SECONDS,
    RETRY_WINDOW,
    backoff_seconds,
    next_attempt,
    should_disable,
)

START = datetime(2026, 12, 1, tzinfo=UTC)


def test_delays_double_from_the_base_within_their_jitter() -> None:
    assert [backoff_seconds(n, 10, 0.5) for n in range(1, 6)] == [10, 20, 40, 80, 160]
    assert backoff_seconds(1, 10, 0.0) == pytest.approx(8.0)
    assert backoff_seconds(1, 10, 0.999999) == pytest.approx(12.0)
    assert backoff_seconds(30, 10, 0.5) == MAX_DELAY_SECONDS
    # A base above the cap is the delay (nothing shorter than the operator asked for).
    assert backoff_seconds(1, 7200, 0.5) == 7200
    # Far past any schedule, no overflow.
    assert backoff_seconds(10_000, 10, 0.5) == MAX_DELAY_SECONDS


@pytest.mark.parametrize("base", [10.0, 0.05, 600.0])
def test_a_delivery_is_tried_for_at_least_a_day(base: float) -> None:
    now, failures, attempts = START, 0, [START]
    while True:
        failures += 1
        due = next_attempt(START, now, failures, base)
        if due is None:
            break
        assert due > now
        assert due - now <= timedelta(seconds=max(MAX_DELAY_SECONDS, base) * 1.2)
        now = due
        attempts.append(now)
        assert failures < 100_000
    assert attempts[-1] - START >= RETRY_WINDOW
    if base == 10.0:
        # The documented schedule: about 33 attempts over a little more than a day.
        assert 28 <= len(attempts) <= 40


def test_an_endpoint_failing_for_three_days_is_disabled() -> None:
    assert timedelta(days=3) == DISABLE_AFTER
    assert not should_disable(START, START + timedelta(days=3) - timedelta(seconds=1))
    assert should_disable(START, START + timedelta(days=3))
