"""The app's routes with their full path templates (prefixes included), read from the routes
as declared.

The framework analyses a route (its parameters, dependencies and response model: a pydantic
adapter each) once per app that includes it, on the first request that reaches its router or
on a walk over the app's effective routes. A walk at every app's creation made each app cost
0.15-0.3 s of CPU, most of a test's own, for routes it never served. So the routers are
included through ``include``, which keeps each with its prefix, and this index is made from
them without the framework's analysis; a server does that analysis up front instead
(``tenantplane.warmup.analyse_routes``). tests/http/test_route_index.py holds the index to
the framework's own view of the app.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute

from tenantplane.http.routers import PrefixedRouter

_INCLUDED = "included_routers"


@dataclass(frozen=True)
class ApiRoute:
    path: str
    method: str
    route: APIRoute


def include(app: FastAPI, router: APIRouter, *, prefix: str = "", **options: Any) -> None:
    """``app.include_router``, kept in the index. Each router holds routes only (a router
    included into another would be known by its full path only to the framework), and one
    with a prefix is a ``PrefixedRouter`` (http/routers.py)."""
    nested = [route for route in router.routes if not isinstance(route, APIRoute)]
    if nested:
        raise TypeError(f"include {nested} into the app itself, not into router {router.prefix!r}")
    if router.prefix and not isinstance(router, PrefixedRouter):
        # Else every request to a router included after it tries each of its routes.
        raise TypeError(f"router {router.prefix!r} has a prefix: make it a PrefixedRouter")
    app.include_router(router, prefix=prefix, **options)
    included: list[tuple[str, APIRouter]] = getattr(app.state, _INCLUDED, [])
    included.append((prefix, router))
    setattr(app.state, _INCLUDED, included)


def api_routes(app: FastAPI) -> Iterator[ApiRoute]:
    """Every (full path, method) served by an APIRoute, HEAD and OPTIONS aside."""
    direct = [("", route) for route in app.router.routes if isinstance(route, APIRoute)]
    included = [
        (prefix, route)
        for prefix, router in getattr(app.state, _INCLUDED, [])
        for route in router.routes
        if isinstance(route, APIRoute)
    ]
    for prefix, route in direct + included:
        for method in sorted(route.methods - {"HEAD", "OPTIONS"}):
            yield ApiRoute(prefix + route.path, method, route)


def templates_by_endpoint(app: FastAPI) -> dict[tuple[Callable[..., Any], str], str]:
    return {(item.route.endpoint, item.method): item.path for item in api_routes(app)}
