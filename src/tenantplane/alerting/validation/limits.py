"""Limits that keep every stored configuration addressable, renderable and cheap to check.

They are stricter than Alertmanager on purpose (see docs/alerting.md, "Limits").
"""

from __future__ import annotations

from typing import Any

from tenantplane.alerting.validation.errors import ConfigError, join

# Child routes below the root route. Deeper trees are refused on every write path: a
# stored tree too deep to serialise would make every later read fail.
MAX_ROUTE_DEPTH = 32
MAX_NAME_LENGTH = 200
# Characters that cannot appear in one path segment of `/receivers/{name}` or
# `/time-intervals/{name}` without being taken as a separator, escape, query or fragment.
_NAME_FORBIDDEN = frozenset("/\\%?#")


def check_route_depth(route: Any, path: str, level: int) -> None:
    """Refuse child routes nested more than MAX_ROUTE_DEPTH levels below the root.

    Iterative, so that it runs safely before anything recursive sees the body;
    ``level`` is the level of ``route`` itself (0 for the root route).
    """
    pending = [(route, path, level)]
    while pending:
        node, where, depth = pending.pop()
        children = node.get("routes") if isinstance(node, dict) else None
        if not isinstance(children, list) or not children:
            continue
        routes_path = join(where, "routes")
        if depth + 1 > MAX_ROUTE_DEPTH:
            raise ConfigError(
                f"child routes nest at most {MAX_ROUTE_DEPTH} levels below the root route",
                routes_path,
                "ROUTE_TOO_DEEP",
            )
        pending.extend(
            (child, join(routes_path, index), depth + 1) for index, child in enumerate(children)
        )


def check_name(value: str, path: str, what: str) -> None:
    """One rule for receiver and time-interval names, in bodies and in paths alike."""
    if (
        not value
        or len(value) > MAX_NAME_LENGTH
        or value in (".", "..")
        or any(ord(c) < 0x20 or ord(c) == 0x7F or c in _NAME_FORBIDDEN for c in value)
    ):
        raise ConfigError(
            f"invalid {what} name: 1-{MAX_NAME_LENGTH} characters, not '.' or '..', "
            "without control characters or any of / \\ % ? #",
            path,
            "INVALID_NAME",
        )
