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
    match = _DURATION.fullmatch(value)
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


_GO_UNITS_NS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,
    "\u03bcs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_GO_SEGMENT = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")


def parse_go_duration(value: str) -> int:
    """Nanoseconds of a Go time.ParseDuration string (`1.5h`, `300ms`); ValueError as Go."""
    invalid = ValueError(f'time: invalid duration "{value}"')
    text = value[1:] if value[:1] in ("-", "+") else value
    if text == "0":
        return 0
    if text == "":
        raise invalid
    total = 0
    position = 0
    while position < len(text):
        match = _GO_SEGMENT.match(text, position)
        assert match is not None
        whole, fraction, unit = match.group(1), match.group(2), match.group(3)
        if not whole and not fraction:
            raise invalid  # no digits before the unit (".s", "s")
        if not unit:
            raise ValueError(f'time: missing unit in duration "{value}"')
        if unit not in _GO_UNITS_NS:
            raise ValueError(f'time: unknown unit "{unit}" in duration "{value}"')
        scale = _GO_UNITS_NS[unit]
        total += int(whole or "0") * scale
        if fraction:
            total += int(fraction) * scale // 10 ** len(fraction)
        if total > 2**63 - 1:
            raise invalid
        position = match.end()
    return total
