"""Routers that turn away at once a request outside their prefix.

The framework finds a request's route by asking each router included into the app, in turn,
whether the request is one of its routes, and a router answers by trying each of its routes
in turn (a few microseconds each: the framework's bookkeeping around every path match). A
request to one of the last routers paid for every route of the routers before it: 0.6 ms of
CPU to answer a 404 through the API's 146 routes, against 0.1 ms for `/healthz`. A router
whose routes all lie under its prefix knows in one match of that prefix that a path outside
it is none of theirs.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter
from starlette.routing import Match
from starlette.types import Scope

# A path parameter of a prefix (`{tenant}`): one segment.
_PARAMETER = re.compile(r"\{[^}]*\}")


def _within(prefix: str) -> re.Pattern[str]:
    """The paths under ``prefix``, whatever comes before it (the prefix the router is included
    under, a root path): its literal parts as they are, each parameter one segment."""
    literal = "[^/]+".join(re.escape(part) for part in _PARAMETER.split(prefix))
    return re.compile(f".*?{literal}(?:/|$)")


class PrefixedRouter(APIRouter):
    """An ``APIRouter`` with a prefix, which answers "none of mine" for a path outside it
    without trying its routes (every route's path starts with the prefix)."""

    def __init__(self, *, prefix: str, **options: Any) -> None:
        if not prefix:
            raise ValueError("a PrefixedRouter needs a prefix")
        super().__init__(prefix=prefix, **options)
        self._within = _within(prefix)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if self._within.match(scope["path"]) is None:
            return Match.NONE, {}
        return super().matches(scope)
