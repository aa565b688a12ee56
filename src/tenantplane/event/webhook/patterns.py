"""What a subscription's ``events`` patterns are, and which actions they match.

A pattern is an action (``invoice.past_due``: exact) or a prefix of one ending in ``*``
(``cluster.*``, ``cluster*``; ``*`` alone: every action), as the event list's ``action``
filter takes them (event/routes.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

PATTERN = r"^(\*|[a-z][a-z0-9_.]*\*?)$"
# An action is at most 80 characters (events.action), a prefix pattern one more.
MAX_PATTERN_LENGTH = 81
MAX_PATTERNS = 50
_PATTERN = re.compile(PATTERN)


def is_pattern(value: str) -> bool:
    return len(value) <= MAX_PATTERN_LENGTH and _PATTERN.match(value) is not None


def matches(patterns: Iterable[str], action: str) -> bool:
    """Whether ``action`` matches one of ``patterns``."""
    for pattern in patterns:
        if pattern.endswith("*"):
            if action.startswith(pattern[:-1]):
                return True
        elif action == pattern:
            return True
    return False
