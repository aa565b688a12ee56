"""The access level every operation of the app declares, read from its routes.

A route declares its level through the ``Public``/``AnyCaller``/``TenantMember``/
``TenantAdmin`` aliases of tenantplane.access, whose dependencies carry the level
(``access_level_of``). The level may also come through a feature's own dependency that
depends on one of them, so the whole dependency tree is searched; the strictest level found
is the route's. A route that declares none is an error, not a default.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, RouteContext, iter_route_contexts
from pydantic import SecretStr

from tenantplane.access import reads_only, writable_in_of
from tenantplane.app import create_app
from tenantplane.config import Settings
from tenantplane.http.access import Access, access_level_of
from tenantplane.tenant.models import TenantState

STRICTNESS = [Access.public, Access.authenticated, Access.member, Access.admin]
# Served by FastAPI itself (OpenAPI document and its viewers): public by construction.
# The viewers and their assets are served from the app (fastapi-offline), not a CDN.
FRAMEWORK_PATHS = frozenset(
    {"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc", "/static-offline-docs"}
)
IGNORED_METHODS = frozenset({"HEAD", "OPTIONS"})
# The console's pages are a client of the API: they declare no level of their own, and
# everything they read or change passes through the API's operations, checked here
# (docs/console.md; tests/console prove a page can do no more than its viewer's API can).
CONSOLE_PREFIX = "/console"


class UndeclaredAccess(AssertionError):
    pass


@dataclass(frozen=True, order=True)
class Operation:
    method: str
    path: str  # the route's full path template, e.g. /api/v1/tenants/{tenant}/members
    level: Access | None  # None: the route declares no level (always an error)
    # The states besides active in which the route's writes are allowed (its declaration).
    writable_in: frozenset[TenantState] = frozenset()
    # Declared through a reading access check (TenantMemberReads, …): opens no session.
    reads_only: bool = False

    def __str__(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def tenant_scoped(self) -> bool:
        return "{tenant}" in self.path

    def declared(self) -> Access:
        if self.level is None:
            raise UndeclaredAccess(
                f"{self} declares no access level: add Public, AnyCaller, TenantMember or "
                "TenantAdmin (tenantplane.access) to its signature"
            )
        return self.level


def _levels(dependant: Dependant) -> Iterator[Access]:
    level = access_level_of(dependant.call)
    if level is not None:
        yield level
    for dependency in dependant.dependencies:
        yield from _levels(dependency)


def _writable_in(dependant: Dependant) -> Iterator[frozenset[TenantState]]:
    if access_level_of(dependant.call) is not None:
        yield writable_in_of(dependant.call)
    for dependency in dependant.dependencies:
        yield from _writable_in(dependency)


def _reads_only(dependant: Dependant) -> Iterator[bool]:
    if access_level_of(dependant.call) is not None:
        yield reads_only(dependant.call)
    for dependency in dependant.dependencies:
        yield from _reads_only(dependency)


def declared_writable_in(route: RouteContext) -> frozenset[TenantState]:
    """The states every access check of the route lets its writes through in."""
    declared = list(_writable_in(route.dependant))
    return frozenset.intersection(*declared) if declared else frozenset()


def declared_level(route: RouteContext) -> Access | None:
    """The strictest level in the route's dependency tree (router-level dependencies
    included: the context is the route as mounted in the app)."""
    dependant: Dependant = route.dependant
    levels = set(_levels(dependant))
    return max(levels, key=STRICTNESS.index) if levels else None


def operations(app: FastAPI) -> list[Operation]:
    """Every operation the app serves, with its declared level (None where it declares
    none: callers fail on it through ``Operation.declared``)."""
    found: list[Operation] = []
    for route in iter_route_contexts(app.routes):
        path = route.path or repr(route.original_route)
        if path.startswith(CONSOLE_PREFIX):
            continue
        level: Access | None = None
        writable_in: frozenset[TenantState] = frozenset()
        reading = False
        if path in FRAMEWORK_PATHS:
            level = Access.public
        elif isinstance(route.original_route, APIRoute):
            level = declared_level(route)
            writable_in = declared_writable_in(route)
            reading = any(_reads_only(route.dependant))
        methods = (route.methods or {"GET"}) - IGNORED_METHODS
        found.extend(Operation(method, path, level, writable_in, reading) for method in methods)
    return sorted(found, key=str)


def introspection_app() -> FastAPI:
    """The app with every route, built only to be read (nothing connects or fetches)."""
    settings = Settings(
        _env_file=None,
        database_url="sqlite+aiosqlite://",
        secret_key=SecretStr("introspection-only"),
        oidc_issuer=None,
    )
    return create_app(settings)
