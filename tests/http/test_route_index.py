"""The index of the app's routes, read from the routes as declared, says what the framework's
own analysis of the app says: every (full path, method) and the route serving it."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute, iter_route_contexts

from tenantplane.app import create_app
from tenantplane.http.route_index import api_routes, include
from tests.conftest import make_settings


def _framework_view(app: FastAPI) -> set[tuple[str, str, int]]:
    # Routes by identity: the very route objects, not equal copies.
    seen = set()
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if isinstance(route, APIRoute) and context.path is not None:
            for method in (context.methods or set()) - {"HEAD", "OPTIONS"}:
                seen.add((context.path, method, id(route)))
    return seen


@pytest.mark.parametrize("console", [True, False])
def test_the_index_is_the_frameworks_view_of_the_app(tmp_path: Path, console: bool) -> None:
    app = create_app(make_settings("sqlite+aiosqlite:///unused.db", tmp_path, console=console))
    indexed = [(item.path, item.method, id(item.route)) for item in api_routes(app)]
    assert len(indexed) == len(set(indexed))
    assert set(indexed) == _framework_view(app)
    paths = {path for path, _, _ in indexed}
    assert "/api/v1/tenants/{tenant}/clusters/{name}" in paths
    assert ("/console/t/{tenant}/alerting/routes" in paths) is console


def test_a_router_holding_another_is_refused() -> None:
    outer, inner = APIRouter(prefix="/outer"), APIRouter()

    @inner.get("/inner")
    async def endpoint() -> None:
        return None

    outer.include_router(inner)
    app = FastAPI()
    with pytest.raises(TypeError, match="into the app itself"):
        include(app, outer)
    assert list(api_routes(app)) == []
