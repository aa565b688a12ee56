"""libfaketime (Debian `faketime`): run a process whose clock is off by a given amount."""

from __future__ import annotations

import glob

import pytest

from tests.backends import INSTALL_TOOLS

CANDIDATES = (
    "/usr/lib/*/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/faketime/libfaketime.so.1",
)


def library() -> str:
    for pattern in CANDIDATES:
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    pytest.fail(f"libfaketime is not installed; run: {INSTALL_TOOLS}", pytrace=False)


def skewed_env(offset: str) -> dict[str, str]:
    """Environment variables that shift a process's wall clock by ``offset`` ("+45s")."""
    return {
        "LD_PRELOAD": library(),
        "FAKETIME": offset,
        # Only the wall clock is off, as on a machine whose NTP failed; timers keep pace.
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "FAKETIME_NO_CACHE": "1",
    }
