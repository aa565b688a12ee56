"""The app's effective routes with their full path templates (prefixes included)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi.routing import APIRoute, iter_route_contexts
from starlette.routing import BaseRoute


@dataclass(frozen=True)
class ApiRoute:
    path: str
    method: str
    route: APIRoute


def api_routes(routes: Sequence[BaseRoute]) -> Iterator[ApiRoute]:
    """Every (full path, method) served by an APIRoute, HEAD and OPTIONS aside."""
    for context in iter_route_contexts(routes):
        route = context.original_route
        if not isinstance(route, APIRoute) or context.path is None:
            continue
        for method in sorted((context.methods or set()) - {"HEAD", "OPTIONS"}):
            yield ApiRoute(context.path, method, route)


def templates_by_endpoint(routes: Sequence[BaseRoute]) -> dict[tuple[Callable[..., Any], str], str]:
    return {(item.route.endpoint, item.method): item.path for item in api_routes(routes)}
