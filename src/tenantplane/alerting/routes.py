"""Alerting configuration endpoints: reads need membership, writes need admin.

Every response carries the wrapper ETag; every write takes an optional If-Match on it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Path, Request, Response, status
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.access import Principal, TenantAdmin, TenantMember
from tenantplane.alerting import service
from tenantplane.alerting.document import Document, receiver_index, time_interval_index
from tenantplane.alerting.openapi import (
    AlertingConfig,
    AlertingGlobalConfig,
    AlertingReceiver,
    AlertingReceiverList,
    AlertingRoute,
    AlertingRouteList,
    request_body,
)
from tenantplane.alerting.redaction import redact_document, redact_global, redact_receiver
from tenantplane.alerting.schemas import (
    JsonObject,
    TemplateList,
    TemplateRead,
    TemplateWrite,
    TimeIntervalList,
    TimeIntervalRead,
    TimeIntervalWrite,
)
from tenantplane.alerting.service import Focus, TenantRef
from tenantplane.alerting.validation import ConfigError
from tenantplane.alerting.validation.limits import check_name
from tenantplane.alerting.validation.policy import Policy
from tenantplane.db.session import SessionDep
from tenantplane.http.errors import NotFound, ValidationFailed, error_responses
from tenantplane.http.etag import NOT_MODIFIED, IfMatch, set_etag
from tenantplane.http.location import set_location
from tenantplane.keys import KeyRing
from tenantplane.providers.alerting.base import AlertingBackend

router = APIRouter(prefix="/tenants/{tenant}/alerting", tags=["alerting"])
T = TypeVar("T")

_ROUTE_INDEX = re.compile(r"^[0-9]{1,6}$")
# A child route's 0-based index, named `id` on the wire (`route_id` in code: never the builtin).
RouteId = Annotated[str, Path(alias="id")]


# Every alerting operation can answer these, besides its own.
_COMMON_ERRORS = (400, 401, 403, 503)


def _responses(
    model: type[BaseModel] | None, *errors: int, created: bool = False
) -> dict[int | str, dict[str, Any]]:
    """The operation's success statuses (typed) and its errors (in the envelope)."""
    responses = error_responses(*sorted({*_COMMON_ERRORS, *errors}))
    if model is not None:
        responses[200] = {"model": model, "description": "OK"}
        if created:
            responses[201] = {"model": model, "description": "Created"}
    return responses


def _read_responses(model: type[BaseModel] | None, *errors: int) -> dict[int | str, dict[str, Any]]:
    """A read's: every one sends the wrapper ETag, so every one is conditional."""
    return {**_responses(model, *errors), **NOT_MODIFIED}


def _created_or_replaced(request: Request, response: Response, created: bool) -> None:
    """A PUT's status: 201 naming the item's own URL (Location) when it created it, else 200."""
    response.status_code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
    if created:
        set_location(request, response)


async def get_backend(request: Request) -> AlertingBackend:
    backend: AlertingBackend = request.app.state.alerting_backend
    return backend


BackendDep = Annotated[AlertingBackend, Depends(get_backend)]


@dataclass(frozen=True)
class Alerting:
    """What every alerting route needs besides the caller: the session and the backend."""

    session: AsyncSession
    backend: AlertingBackend
    keys: KeyRing
    policy: Policy

    async def read(self, principal: Principal) -> service.Snapshot:
        return await service.read(
            self.session, self.backend, _tenant(principal), self.keys, self.policy
        )

    async def write(
        self,
        principal: Principal,
        if_match: str | None,
        change: Callable[[Document], T],
        focus: Focus | Callable[[Document], Focus] = service.WHOLE_DOCUMENT,
        *,
        reset: bool = False,
    ) -> service.Written[T]:
        return await service.write(
            self.session,
            self.backend,
            _tenant(principal),
            self.keys,
            if_match,
            change,
            focus,
            reset=reset,
            policy=self.policy,
        )


async def get_alerting(session: SessionDep, backend: BackendDep, request: Request) -> Alerting:
    return Alerting(session, backend, request.app.state.keys, request.app.state.alerting_policy)


AlertingDep = Annotated[Alerting, Depends(get_alerting)]


def _tenant(principal: Principal) -> TenantRef:
    return TenantRef(principal.tenant_id, principal.tenant_name)


def _check_name(value: str, what: str) -> str:
    """The same rule as names inside a body (validation.limits), so every name stored
    through `PUT /config` is addressable by its own path, and the reverse."""
    try:
        check_name(value, "name", what)
    except ConfigError as exc:
        raise ValidationFailed(exc.message, field="name", code=exc.code) from None
    return value


def _route_index(value: str) -> int:
    if not _ROUTE_INDEX.fullmatch(value):
        raise ValidationFailed(
            "invalid route id: a 0-based integer index", field="id", code="INVALID_ID"
        )
    return int(value)


def _wrapper(document: Document) -> dict[str, Any]:
    return {
        "global": document["global"],
        "receivers": document["receivers"],
        "route": document["route"],
        "templates": document["templates"],
        "time_intervals": document["time_intervals"],
    }


# --- the whole wrapper -------------------------------------------------------------------


@router.get(
    "/config",
    summary="Read the whole alerting configuration",
    response_model=None,
    responses=_read_responses(AlertingConfig),
)
async def get_config(
    principal: TenantMember,
    alerting: AlertingDep,
    response: Response,
) -> dict[str, Any]:
    """The wrapper: global, receivers, root route, templates, time intervals; ETag header.
    Credentials read `<secret>` unless the caller is an admin."""
    snapshot = await alerting.read(principal)
    set_etag(response, snapshot.version)
    document = snapshot.document if principal.is_admin else redact_document(snapshot.document)
    return _wrapper(document)


@router.put(
    "/config",
    summary="Replace the whole alerting configuration",
    response_model=None,
    responses=_responses(AlertingConfig, 412),
    openapi_extra=request_body(AlertingConfig),
)
async def put_config(
    principal: TenantAdmin,
    body: JsonObject,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> dict[str, Any]:
    """Validated whole as Alertmanager would; sections left out become empty."""
    written = await alerting.write(
        principal,
        if_match,
        service.replace_document(body),
    )
    set_etag(response, written.snapshot.version)
    return _wrapper(written.snapshot.document)


@router.delete(
    "/config",
    summary="Reset the alerting configuration to the default",
    response_model=None,
    responses=_responses(AlertingConfig, 412),
)
async def reset_config(
    principal: TenantAdmin,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> dict[str, Any]:
    """One receiver `default` without integrations and a root route to it."""
    written = await alerting.write(
        principal,
        if_match,
        service.reset_document,
        reset=True,
    )
    set_etag(response, written.snapshot.version)
    return _wrapper(written.snapshot.document)


# --- receivers ---------------------------------------------------------------------------


@router.get(
    "/receivers",
    summary="List receivers",
    response_model=None,
    responses=_read_responses(AlertingReceiverList),
)
async def list_receivers(
    principal: TenantMember,
    alerting: AlertingDep,
    response: Response,
) -> dict[str, Any]:
    """Every receiver with its integrations, in stored order (credentials read `<secret>`
    unless the caller is an admin)."""
    snapshot = await alerting.read(principal)
    set_etag(response, snapshot.version)
    receivers = snapshot.document["receivers"]
    if not principal.is_admin:
        receivers = [redact_receiver(receiver) for receiver in receivers]
    return {"items": receivers}


@router.get(
    "/receivers/{name}",
    summary="Read one receiver",
    response_model=None,
    responses=_read_responses(AlertingReceiver, 404),
)
async def get_receiver(
    principal: TenantMember,
    name: str,
    alerting: AlertingDep,
    response: Response,
) -> dict[str, Any]:
    """The receiver called `name` (credentials read `<secret>` unless the caller is an
    admin)."""
    _check_name(name, "receiver")
    snapshot = await alerting.read(principal)
    index = receiver_index(snapshot.document, name)
    if index is None:
        raise NotFound(f"receiver {name}")
    set_etag(response, snapshot.version)
    receiver: dict[str, Any] = snapshot.document["receivers"][index]
    return receiver if principal.is_admin else redact_receiver(receiver)


@router.put(
    "/receivers/{name}",
    summary="Create or replace a receiver",
    response_model=None,
    responses=_responses(AlertingReceiver, 412, created=True),
    openapi_extra=request_body(AlertingReceiver),
)
async def put_receiver(
    principal: TenantAdmin,
    name: str,
    body: JsonObject,
    alerting: AlertingDep,
    request: Request,
    response: Response,
    if_match: IfMatch = None,
) -> dict[str, Any]:
    """201 when created, 200 when replaced; the path's name wins over `name` in the body."""
    _check_name(name, "receiver")
    written = await alerting.write(
        principal,
        if_match,
        service.upsert_receiver(name, body),
        service.receiver_focus(name),
    )
    receiver, created = written.value
    set_etag(response, written.snapshot.version)
    _created_or_replaced(request, response, created)
    result: dict[str, Any] = receiver
    return result


@router.delete(
    "/receivers/{name}",
    summary="Delete a receiver",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=_responses(None, 404, 409, 412),
)
async def delete_receiver(
    principal: TenantAdmin,
    name: str,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> None:
    """409 `RECEIVER_IN_USE` while a route refers to it."""
    _check_name(name, "receiver")
    written = await alerting.write(
        principal,
        if_match,
        service.delete_receiver(name),
    )
    set_etag(response, written.snapshot.version)


# --- routes (children of the root route) and the root route -----------------------------


@router.get(
    "/routes",
    summary="List the root route's child routes",
    response_model=None,
    responses=_read_responses(AlertingRouteList),
)
async def list_routes(
    principal: TenantMember,
    alerting: AlertingDep,
    response: Response,
) -> dict[str, Any]:
    """Child routes in order; their index is the `id` of the item endpoints."""
    snapshot = await alerting.read(principal)
    set_etag(response, snapshot.version)
    return {"items": snapshot.document["route"].get("routes", [])}


@router.get(
    "/routes/{id}",
    summary="Read one child route",
    response_model=None,
    responses=_read_responses(AlertingRoute, 404),
)
async def get_route(
    principal: TenantMember,
    route_id: RouteId,
    alerting: AlertingDep,
    response: Response,
) -> dict[str, Any]:
    """The child route at 0-based index `id`, with its own nested routes."""
    index = _route_index(route_id)
    snapshot = await alerting.read(principal)
    routes = snapshot.document["route"].get("routes", [])
    if index >= len(routes):
        raise NotFound(f"route {index}")
    set_etag(response, snapshot.version)
    route: dict[str, Any] = routes[index]
    return route


@router.put(
    "/routes/{id}",
    summary="Replace or append a child route",
    response_model=None,
    responses=_responses(AlertingRoute, 412, created=True),
    openapi_extra=request_body(AlertingRoute),
)
async def put_route(
    principal: TenantAdmin,
    route_id: RouteId,
    body: JsonObject,
    alerting: AlertingDep,
    request: Request,
    response: Response,
    if_match: IfMatch = None,
) -> dict[str, Any]:
    """200 replacing index `id`; 201 appending when `id` equals the count; 400 beyond."""
    index = _route_index(route_id)
    written = await alerting.write(
        principal,
        if_match,
        service.put_route(index, body),
        Focus(f"route.routes[{index}]"),
    )
    route, created = written.value
    set_etag(response, written.snapshot.version)
    _created_or_replaced(request, response, created)
    result: dict[str, Any] = route
    return result


@router.delete(
    "/routes/{id}",
    summary="Delete a child route",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=_responses(None, 404, 412),
)
async def delete_route(
    principal: TenantAdmin,
    route_id: RouteId,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> None:
    """Later child routes move up one index."""
    index = _route_index(route_id)
    written = await alerting.write(
        principal,
        if_match,
        service.delete_route(index),
    )
    set_etag(response, written.snapshot.version)


@router.get(
    "/route",
    summary="Read the root route",
    response_model=None,
    responses=_read_responses(AlertingRoute),
)
async def get_root_route(
    principal: TenantMember,
    alerting: AlertingDep,
    response: Response,
) -> dict[str, Any]:
    """The root route, children included."""
    snapshot = await alerting.read(principal)
    set_etag(response, snapshot.version)
    route: dict[str, Any] = snapshot.document["route"]
    return route


@router.put(
    "/route",
    summary="Replace the root route",
    response_model=None,
    responses=_responses(AlertingRoute, 412),
    openapi_extra=request_body(AlertingRoute),
)
async def put_root_route(
    principal: TenantAdmin,
    body: JsonObject,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> dict[str, Any]:
    """Children are kept unless the body has `routes`, which then replaces them."""
    written = await alerting.write(
        principal,
        if_match,
        service.put_root_route(body),
        Focus("route"),
    )
    set_etag(response, written.snapshot.version)
    route: dict[str, Any] = written.value
    return route


# --- global ------------------------------------------------------------------------------


@router.get(
    "/global",
    summary="Read the global section",
    response_model=None,
    responses=_read_responses(AlertingGlobalConfig),
)
async def get_global(
    principal: TenantMember,
    alerting: AlertingDep,
    response: Response,
) -> dict[str, Any]:
    """Only the settings the tenant set (credentials read `<secret>` unless the caller is
    an admin)."""
    snapshot = await alerting.read(principal)
    set_etag(response, snapshot.version)
    glob: dict[str, Any] = snapshot.document["global"]
    return glob if principal.is_admin else redact_global(glob)


@router.put(
    "/global",
    summary="Replace the global section",
    response_model=None,
    responses=_responses(AlertingGlobalConfig, 412),
    openapi_extra=request_body(AlertingGlobalConfig),
)
async def put_global(
    principal: TenantAdmin,
    body: JsonObject,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> dict[str, Any]:
    """The section is replaced whole."""
    written = await alerting.write(
        principal,
        if_match,
        service.put_global(body),
        Focus("global"),
    )
    set_etag(response, written.snapshot.version)
    glob: dict[str, Any] = written.value
    return glob


# --- templates ---------------------------------------------------------------------------


@router.get(
    "/templates",
    summary="List template files",
    response_model=None,
    responses=_read_responses(TemplateList),
)
async def list_templates(
    principal: TenantMember,
    alerting: AlertingDep,
    response: Response,
) -> dict[str, Any]:
    """Every template file with its contents, sorted by file name."""
    snapshot = await alerting.read(principal)
    set_etag(response, snapshot.version)
    items = [
        TemplateRead(filename=name, contents=contents).model_dump(by_alias=True)
        for name, contents in sorted(snapshot.document["templates"].items())
    ]
    return {"items": items}


@router.get(
    "/templates/{filename}",
    summary="Read one template file",
    responses=_read_responses(None, 404),
)
async def get_template(
    principal: TenantMember,
    filename: str,
    alerting: AlertingDep,
    response: Response,
) -> TemplateRead:
    """The file's name and contents."""
    snapshot = await alerting.read(principal)
    contents = snapshot.document["templates"].get(filename)
    if contents is None:
        raise NotFound(f"template {filename}")
    set_etag(response, snapshot.version)
    return TemplateRead(filename=filename, contents=contents)


@router.put(
    "/templates/{filename}",
    summary="Create or replace a template file",
    responses=_responses(TemplateRead, 412, created=True),
)
async def put_template(
    principal: TenantAdmin,
    filename: str,
    body: TemplateWrite,
    alerting: AlertingDep,
    request: Request,
    response: Response,
    if_match: IfMatch = None,
) -> TemplateRead:
    """201 when created, 200 when replaced; at most 256 KiB, parsed as a Go template."""
    written = await alerting.write(
        principal,
        if_match,
        service.put_template(filename, body.contents),
        Focus(f"templates.{filename}", whole="contents"),
    )
    set_etag(response, written.snapshot.version)
    _created_or_replaced(request, response, written.value)
    return TemplateRead(filename=filename, contents=body.contents)


@router.delete(
    "/templates/{filename}",
    summary="Delete a template file",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=_responses(None, 404, 412),
)
async def delete_template(
    principal: TenantAdmin,
    filename: str,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> None:
    """The file is removed from the configuration."""
    written = await alerting.write(
        principal,
        if_match,
        service.delete_template(filename),
    )
    set_etag(response, written.snapshot.version)


# --- time intervals ----------------------------------------------------------------------


@router.get(
    "/time-intervals",
    summary="List time intervals",
    response_model=None,
    responses=_read_responses(TimeIntervalList),
)
async def list_time_intervals(
    principal: TenantMember,
    alerting: AlertingDep,
    response: Response,
) -> dict[str, Any]:
    """Every named time interval, in stored order."""
    snapshot = await alerting.read(principal)
    set_etag(response, snapshot.version)
    return {"items": snapshot.document["time_intervals"]}


@router.get(
    "/time-intervals/{name}",
    summary="Read one time interval",
    responses=_read_responses(None, 404),
)
async def get_time_interval(
    principal: TenantMember,
    name: str,
    alerting: AlertingDep,
    response: Response,
) -> TimeIntervalRead:
    """The named time interval's definitions."""
    _check_name(name, "time interval")
    snapshot = await alerting.read(principal)
    index = time_interval_index(snapshot.document, name)
    if index is None:
        raise NotFound(f"time interval {name}")
    set_etag(response, snapshot.version)
    entry = snapshot.document["time_intervals"][index]
    return TimeIntervalRead(name=name, time_intervals=entry.get("time_intervals", []))


@router.put(
    "/time-intervals/{name}",
    summary="Create or replace a time interval",
    responses=_responses(TimeIntervalRead, 412, created=True),
)
async def put_time_interval(
    principal: TenantAdmin,
    name: str,
    body: TimeIntervalWrite,
    alerting: AlertingDep,
    request: Request,
    response: Response,
    if_match: IfMatch = None,
) -> TimeIntervalRead:
    """201 when created, 200 when replaced; the path's name is authoritative."""
    _check_name(name, "time interval")
    written = await alerting.write(
        principal,
        if_match,
        service.put_time_interval(name, body.time_intervals),
        service.time_interval_focus(name),
    )
    entry, created = written.value
    set_etag(response, written.snapshot.version)
    _created_or_replaced(request, response, created)
    return TimeIntervalRead(name=name, time_intervals=entry["time_intervals"])


@router.delete(
    "/time-intervals/{name}",
    summary="Delete a time interval",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=_responses(None, 404, 409, 412),
)
async def delete_time_interval(
    principal: TenantAdmin,
    name: str,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> None:
    """409 `TIME_INTERVAL_IN_USE` while a route refers to it."""
    _check_name(name, "time interval")
    written = await alerting.write(
        principal,
        if_match,
        service.delete_time_interval(name),
    )
    set_etag(response, written.snapshot.version)
