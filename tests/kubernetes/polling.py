"""Waiting for the bed's controllers, which act asynchronously."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from lightkube import ApiError

T = TypeVar("T")


def eventually(check: Callable[[], T | None], what: str, timeout: float = 60) -> T:
    """Calls ``check`` until it returns something other than None, and returns that. A 404
    counts as "not yet": objects appear when a controller gets to them."""
    deadline = time.monotonic() + timeout
    while (result := _unless_missing(check)) is None:
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        time.sleep(0.25)
    return result


def _unless_missing(check: Callable[[], T | None]) -> T | None:
    try:
        return check()
    except ApiError as error:
        if error.status.code == 404:
            return None
        raise


def gone(read: Callable[[], object]) -> Callable[[], bool | None]:
    """A check that is True once ``read`` answers 404."""

    def check() -> bool | None:
        try:
            read()
        except ApiError as error:
            if error.status.code == 404:
                return True
            raise
        return None

    return check
