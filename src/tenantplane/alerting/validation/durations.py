"""Prometheus durations (prometheus/common model.ParseDuration)."""

from __future__ import annotations

import re

_DURATION = re.compile(
    r"^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$"
)
_UNIT_MILLIS = (
    365 * 24 * 3600 * 1000,
    7 * 24 * 3600 * 1000,
    24 * 3600 * 1000,
    3600 * 1000,
    60 * 1000,
    1000,
    1,
)
_MAX_MILLIS = (2**63 - 1) // 1_000_000  # Go's time.Duration counts nanoseconds in an int64


def parse_duration(value: str) -> int:
    """Milliseconds of a duration such as ``1h30m``; raise ValueError like Prometheus."""
    if value == "0":
        return 0
    if value == "":
        raise ValueError("empty duration string")
    match = _DURATION.match(value)
    if match is None:
        raise ValueError(f'not a valid duration string: "{value}"')
    total = 0
    for index, unit in enumerate(_UNIT_MILLIS):
        digits = match.group(2 * index + 2)
        if digits is None:
            continue
        total += int(digits) * unit
        if total > _MAX_MILLIS:
            raise ValueError(f'duration out of range: "{value}"')
    return total
