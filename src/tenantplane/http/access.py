"""Access levels: what a route requires of its caller, readable from the route itself.

The checks that enforce a level need the application's credentials and memberships, so
they live in ``tenantplane.access``; this module holds only the levels and the tag that
lets the OpenAPI document and the tests read a route's level by introspection.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from typing import Any

AccessCheck = Callable[..., Awaitable[Any]]


class Access(enum.StrEnum):
    public = "public"
    authenticated = "authenticated"  # any valid credential, whatever the tenant
    member = "member"
    admin = "admin"


def tag_access(check: AccessCheck, level: Access) -> AccessCheck:
    """Mark ``check`` as the dependency that enforces ``level``."""
    check.access_level = level  # type: ignore[attr-defined]
    return check


def access_level_of(dependency: object) -> Access | None:
    level = getattr(dependency, "access_level", None)
    return level if isinstance(level, Access) else None
