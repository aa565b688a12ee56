"""Time interval definitions (Alertmanager's timeinterval package)."""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Callable

from tenantplane.alerting.validation.errors import ConfigError, join

_TIME = re.compile(r"^((([01][0-9])|(2[0-3])):[0-5][0-9])$|(^24:00$)")
WEEKDAYS = {
    name: index
    for index, name in enumerate(
        ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]
    )
}
MONTHS = {
    name: index + 1
    for index, name in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ]
    )
}
_CODE = "INVALID_TIME_INTERVAL"
INTERVAL_FIELDS = frozenset({"times", "weekdays", "days_of_month", "months", "years", "location"})


def _minutes(value: object) -> int:
    if not isinstance(value, str) or not _TIME.fullmatch(value):
        raise ValueError(f"couldn't parse timestamp {value}, invalid format")
    hours, minutes = value.split(":")
    return int(hours) * 60 + int(minutes)


def _check_times(entry: object, path: str) -> None:
    if not isinstance(entry, dict):
        raise ConfigError("must be an object with start_time and end_time", path)
    unknown = sorted(set(entry) - {"start_time", "end_time"})
    if unknown:
        raise ConfigError(f"unknown field: {unknown[0]}", join(path, unknown[0]), "UNKNOWN_FIELD")
    if not entry.get("start_time") or not entry.get("end_time"):
        raise ConfigError("both start and end times must be provided", path, _CODE)
    try:
        start, end = _minutes(entry["start_time"]), _minutes(entry["end_time"])
    except ValueError as exc:
        raise ConfigError(str(exc), path, _CODE) from None
    if start >= end:
        raise ConfigError("start time cannot be equal or greater than end time", path, _CODE)


def _split_range(value: str) -> tuple[str, str]:
    parts = value.split(":")
    if len(parts) > 2:
        raise ValueError(f"couldn't parse range {value}, invalid format")
    return (parts[0], parts[-1])


def _weekday(text: str) -> int:
    if text not in WEEKDAYS:
        raise ValueError(f"{text} is not a valid weekday")
    return WEEKDAYS[text]


def _check_weekdays(value: str) -> None:
    low, high = _split_range(value.lower())
    if _weekday(low) > _weekday(high):
        raise ValueError("start day cannot be before end day")


def _go_int(text: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise ValueError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    # Go's int is 64 bits; the digit count is checked first so that no huge literal is
    # ever converted.
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > 19 or not -(2**63) <= int(text) < 2**63:
        raise ValueError(f'strconv.Atoi: parsing "{text}": value out of range')
    return int(text)


def _check_days_of_month(value: str) -> None:
    low_text, high_text = _split_range(value)
    low, high = _go_int(low_text), _go_int(high_text)
    for day in (low, high):
        if day == 0 or day < -31 or day > 31:
            raise ValueError(f"{day} is not a valid day of the month: out of range")
    if low < 0 < high:
        raise ValueError("end day must be negative if start day is negative")
    check_low = 28 + low if low < 0 else low
    check_high = 28 + high if high < 0 else high
    if check_low > check_high:
        raise ValueError(f"end day {high} is always before start day {low}")


def _month(text: str) -> int:
    lowered = text.lower()
    if lowered in MONTHS:
        return MONTHS[lowered]
    if re.fullmatch(r"[+-]?[0-9]+", text):
        return _go_int(text)  # Alertmanager 0.25 does not range-check numeric months
    raise ValueError(f"{text} is not a valid month")


def _check_months(value: str) -> None:
    low, high = _split_range(value)
    if _month(low) > _month(high):
        raise ValueError(f"end month {high} is before start month {low}")


def _check_years(value: str) -> None:
    low_text, high_text = _split_range(value)
    low, high = _go_int(low_text), _go_int(high_text)
    if low > high:
        raise ValueError(f"end year {high} is before start year {low}")


_RANGE_CHECKS: dict[str, Callable[[str], None]] = {
    "weekdays": _check_weekdays,
    "days_of_month": _check_days_of_month,
    "months": _check_months,
    "years": _check_years,
}


def _check_location(value: object, path: str) -> None:
    if not isinstance(value, str):
        raise ConfigError("must be a string", path)
    if value in ("", "UTC", "Local"):
        return
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"unknown time zone {value}", path, _CODE) from None


def check_time_interval(interval: object, path: str) -> None:
    """One entry of a named time interval's ``time_intervals`` list."""
    if not isinstance(interval, dict):
        raise ConfigError("must be an object", path)
    unknown = sorted(set(interval) - INTERVAL_FIELDS)
    if unknown:
        raise ConfigError(f"unknown field: {unknown[0]}", join(path, unknown[0]), "UNKNOWN_FIELD")
    for field, check in _RANGE_CHECKS.items():
        values = interval.get(field)
        if values is None:
            continue
        field_path = join(path, field)
        if not isinstance(values, list):
            raise ConfigError("must be an array of strings", field_path)
        for index, value in enumerate(values):
            if not isinstance(value, str):
                raise ConfigError("must be a string", join(field_path, index))
            try:
                check(value)
            except ValueError as exc:
                raise ConfigError(str(exc), join(field_path, index), _CODE) from None
    times = interval.get("times")
    if times is not None:
        if not isinstance(times, list):
            raise ConfigError("must be an array", join(path, "times"))
        for index, entry in enumerate(times):
            _check_times(entry, join(join(path, "times"), index))
    if "location" in interval and interval["location"] is not None:
        _check_location(interval["location"], join(path, "location"))
