"""Waiting for the bed's controllers, which act asynchronously."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(check: Callable[[], T | None], what: str, timeout: float = 60) -> T:
    """Calls ``check`` until it returns something other than None, and returns that."""
    deadline = time.monotonic() + timeout
    while (result := check()) is None:
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        time.sleep(0.25)
    return result
