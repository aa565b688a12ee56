"""A router with a prefix turns away a path outside it without trying its routes, and serves
what is under it as any router does (a 405 for another method included)."""

from __future__ import annotations

import httpx
import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute
from starlette.types import Scope

from tenantplane.http.route_index import include
from tenantplane.http.routers import PrefixedRouter

tried: list[str] = []


class CountedRoute(APIRoute):
    def matches(self, scope: Scope) -> tuple[object, Scope]:  # type: ignore[override]
        tried.append(self.path)
        return super().matches(scope)


def _app() -> FastAPI:
    first = PrefixedRouter(prefix="/tenants/{tenant}/clusters", route_class=CountedRoute)
    second = PrefixedRouter(prefix="/tenants/{tenant}/secrets", route_class=CountedRoute)

    @first.get("")
    @first.get("/{name}")
    async def cluster() -> str:
        return "cluster"

    @second.get("/{name}")
    async def secret() -> str:
        return "secret"

    app = FastAPI()
    include(app, first, prefix="/api/v1")
    include(app, second, prefix="/api/v1")
    return app


@pytest.mark.parametrize(
    ("path", "method", "status", "answer", "routes_tried"),
    [
        # Past the first router without trying its routes.
        ("/api/v1/tenants/a/secrets/s", "GET", 200, "secret", ["/tenants/{tenant}/secrets/{name}"]),
        ("/api/v1/tenants/a/clusters/c", "GET", 200, "cluster", None),
        ("/api/v1/tenants/a/clusters", "GET", 200, "cluster", None),
        ("/api/v1/tenants/a/secrets/s", "DELETE", 405, None, None),
        ("/api/v1/tenants/a/other/s", "GET", 404, None, []),
        ("/api/v1/tenants/a/clustersx", "GET", 404, None, []),
    ],
)
async def test_paths_outside_a_prefix_try_none_of_its_routes(
    path: str, method: str, status: int, answer: str | None, routes_tried: list[str] | None
) -> None:
    transport = httpx.ASGITransport(app=_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        tried.clear()
        response = await client.request(method, path)
    assert response.status_code == status
    if answer is not None:
        assert response.json() == answer
    if routes_tried is not None:
        # The framework tries the matched route twice (the app's router, then its own).
        assert sorted(set(tried)) == routes_tried


def test_a_router_with_a_prefix_is_a_prefixed_router() -> None:
    with pytest.raises(TypeError, match="make it a PrefixedRouter"):
        include(FastAPI(), APIRouter(prefix="/tenants/{tenant}/things"))
    with pytest.raises(ValueError, match="needs a prefix"):
        PrefixedRouter(prefix="")
