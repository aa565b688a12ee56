"""Alerting configuration endpoints: reads need membership, writes need admin.

Every response carries the wrapper ETag; every write takes an optional If-Match on it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Request, Response, status
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.alerting import service
from tenantplane.alerting.document import Document, receiver_index, time_interval_index
from tenantplane.alerting.schemas import (
    JsonObject,
    TemplateRead,
    TemplateWrite,
    TimeIntervalRead,
    TimeIntervalWrite,
)
from tenantplane.alerting.service import Focus, TenantRef
from tenantplane.alerting.validation import ConfigError
from tenantplane.alerting.validation.limits import check_name
from tenantplane.db.session import SessionDep
from tenantplane.http.auth import Principal, TenantAdmin, TenantMember
from tenantplane.http.errors import NotFound, ValidationFailed, error_responses
from tenantplane.http.etag import IfMatch, set_etag
from tenantplane.providers.alerting.base import AlertingBackend

router = APIRouter(prefix="/tenants/{tenant}/alerting", tags=["alerting"])
T = TypeVar("T")

_ROUTE_INDEX = re.compile(r"^[0-9]{1,6}$")


def get_backend(request: Request) -> AlertingBackend:
    backend: AlertingBackend = request.app.state.alerting_backend
    return backend


BackendDep = Annotated[AlertingBackend, Depends(get_backend)]


@dataclass(frozen=True)
class Alerting:
    """What every alerting route needs besides the caller: the session and the backend."""

    session: AsyncSession
    backend: AlertingBackend
    secret_key: bytes

    async def read(self, principal: Principal) -> service.Snapshot:
        return await service.read(self.session, self.backend, _tenant(principal), self.secret_key)

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
            self.secret_key,
            if_match,
            change,
            focus,
            reset=reset,
        )


async def get_alerting(session: SessionDep, backend: BackendDep, request: Request) -> Alerting:
    return Alerting(session, backend, request.app.state.api_key_secret)


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
    if not _ROUTE_INDEX.match(value):
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


@router.get("/config")
async def get_config(
    principal: TenantMember,
    alerting: AlertingDep,
    response: Response,
) -> dict[str, Any]:
    snapshot = await alerting.read(principal)
    set_etag(response, snapshot.version)
    return _wrapper(snapshot.document)


@router.put("/config", responses=error_responses(412))
async def put_config(
    principal: TenantAdmin,
    body: JsonObject,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> dict[str, Any]:
    written = await alerting.write(
        principal,
        if_match,
        service.replace_document(body),
    )
    set_etag(response, written.snapshot.version)
    return _wrapper(written.snapshot.document)


@router.delete("/config", responses=error_responses(412))
async def reset_config(
    principal: TenantAdmin,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> dict[str, Any]:
    written = await alerting.write(
        principal,
        if_match,
        service.reset_document,
        reset=True,
    )
    set_etag(response, written.snapshot.version)
    return _wrapper(written.snapshot.document)


# --- receivers ---------------------------------------------------------------------------


@router.get("/receivers")
async def list_receivers(
    principal: TenantMember,
    alerting: AlertingDep,
    response: Response,
) -> dict[str, Any]:
    snapshot = await alerting.read(principal)
    set_etag(response, snapshot.version)
    return {"items": snapshot.document["receivers"]}


@router.get("/receivers/{name}", responses=error_responses(404))
async def get_receiver(
    principal: TenantMember,
    name: str,
    alerting: AlertingDep,
    response: Response,
) -> dict[str, Any]:
    _check_name(name, "receiver")
    snapshot = await alerting.read(principal)
    index = receiver_index(snapshot.document, name)
    if index is None:
        raise NotFound(f"receiver {name}")
    set_etag(response, snapshot.version)
    receiver: dict[str, Any] = snapshot.document["receivers"][index]
    return receiver


@router.put("/receivers/{name}", responses=error_responses(412))
async def put_receiver(
    principal: TenantAdmin,
    name: str,
    body: JsonObject,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> dict[str, Any]:
    _check_name(name, "receiver")
    written = await alerting.write(
        principal,
        if_match,
        service.upsert_receiver(name, body),
        service.receiver_focus(name),
    )
    receiver, created = written.value
    set_etag(response, written.snapshot.version)
    response.status_code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
    result: dict[str, Any] = receiver
    return result


@router.delete(
    "/receivers/{name}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=error_responses(404, 409, 412),
)
async def delete_receiver(
    principal: TenantAdmin,
    name: str,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> None:
    _check_name(name, "receiver")
    written = await alerting.write(
        principal,
        if_match,
        service.delete_receiver(name),
    )
    set_etag(response, written.snapshot.version)


# --- routes (children of the root route) and the root route -----------------------------


@router.get("/routes")
async def list_routes(
    principal: TenantMember,
    alerting: AlertingDep,
    response: Response,
) -> dict[str, Any]:
    snapshot = await alerting.read(principal)
    set_etag(response, snapshot.version)
    return {"items": snapshot.document["route"].get("routes", [])}


@router.get("/routes/{id}", responses=error_responses(404))
async def get_route(
    principal: TenantMember,
    id: str,
    alerting: AlertingDep,
    response: Response,
) -> dict[str, Any]:
    index = _route_index(id)
    snapshot = await alerting.read(principal)
    routes = snapshot.document["route"].get("routes", [])
    if index >= len(routes):
        raise NotFound(f"route {index}")
    set_etag(response, snapshot.version)
    route: dict[str, Any] = routes[index]
    return route


@router.put("/routes/{id}", responses=error_responses(412))
async def put_route(
    principal: TenantAdmin,
    id: str,
    body: JsonObject,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> dict[str, Any]:
    index = _route_index(id)
    written = await alerting.write(
        principal,
        if_match,
        service.put_route(index, body),
        Focus(f"route.routes[{index}]"),
    )
    route, created = written.value
    set_etag(response, written.snapshot.version)
    response.status_code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
    result: dict[str, Any] = route
    return result


@router.delete(
    "/routes/{id}", status_code=status.HTTP_204_NO_CONTENT, responses=error_responses(404, 412)
)
async def delete_route(
    principal: TenantAdmin,
    id: str,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> None:
    index = _route_index(id)
    written = await alerting.write(
        principal,
        if_match,
        service.delete_route(index),
    )
    set_etag(response, written.snapshot.version)


@router.get("/route")
async def get_root_route(
    principal: TenantMember,
    alerting: AlertingDep,
    response: Response,
) -> dict[str, Any]:
    snapshot = await alerting.read(principal)
    set_etag(response, snapshot.version)
    route: dict[str, Any] = snapshot.document["route"]
    return route


@router.put("/route", responses=error_responses(412))
async def put_root_route(
    principal: TenantAdmin,
    body: JsonObject,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> dict[str, Any]:
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


@router.get("/global")
async def get_global(
    principal: TenantMember,
    alerting: AlertingDep,
    response: Response,
) -> dict[str, Any]:
    snapshot = await alerting.read(principal)
    set_etag(response, snapshot.version)
    glob: dict[str, Any] = snapshot.document["global"]
    return glob


@router.put("/global", responses=error_responses(412))
async def put_global(
    principal: TenantAdmin,
    body: JsonObject,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> dict[str, Any]:
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


@router.get("/templates")
async def list_templates(
    principal: TenantMember,
    alerting: AlertingDep,
    response: Response,
) -> dict[str, Any]:
    snapshot = await alerting.read(principal)
    set_etag(response, snapshot.version)
    items = [
        TemplateRead(filename=name, contents=contents).model_dump(by_alias=True)
        for name, contents in sorted(snapshot.document["templates"].items())
    ]
    return {"items": items}


@router.get("/templates/{filename}", responses=error_responses(404))
async def get_template(
    principal: TenantMember,
    filename: str,
    alerting: AlertingDep,
    response: Response,
) -> TemplateRead:
    snapshot = await alerting.read(principal)
    contents = snapshot.document["templates"].get(filename)
    if contents is None:
        raise NotFound(f"template {filename}")
    set_etag(response, snapshot.version)
    return TemplateRead(filename=filename, contents=contents)


@router.put("/templates/{filename}", responses=error_responses(412))
async def put_template(
    principal: TenantAdmin,
    filename: str,
    body: TemplateWrite,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> TemplateRead:
    written = await alerting.write(
        principal,
        if_match,
        service.put_template(filename, body.contents),
        Focus(f"templates.{filename}", whole="contents"),
    )
    set_etag(response, written.snapshot.version)
    response.status_code = status.HTTP_201_CREATED if written.value else status.HTTP_200_OK
    return TemplateRead(filename=filename, contents=body.contents)


@router.delete(
    "/templates/{filename}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=error_responses(404, 412),
)
async def delete_template(
    principal: TenantAdmin,
    filename: str,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> None:
    written = await alerting.write(
        principal,
        if_match,
        service.delete_template(filename),
    )
    set_etag(response, written.snapshot.version)


# --- time intervals ----------------------------------------------------------------------


@router.get("/time-intervals")
async def list_time_intervals(
    principal: TenantMember,
    alerting: AlertingDep,
    response: Response,
) -> dict[str, Any]:
    snapshot = await alerting.read(principal)
    set_etag(response, snapshot.version)
    return {"items": snapshot.document["time_intervals"]}


@router.get("/time-intervals/{name}", responses=error_responses(404))
async def get_time_interval(
    principal: TenantMember,
    name: str,
    alerting: AlertingDep,
    response: Response,
) -> TimeIntervalRead:
    _check_name(name, "time interval")
    snapshot = await alerting.read(principal)
    index = time_interval_index(snapshot.document, name)
    if index is None:
        raise NotFound(f"time interval {name}")
    set_etag(response, snapshot.version)
    entry = snapshot.document["time_intervals"][index]
    return TimeIntervalRead(name=name, time_intervals=entry.get("time_intervals", []))


@router.put("/time-intervals/{name}", responses=error_responses(412))
async def put_time_interval(
    principal: TenantAdmin,
    name: str,
    body: TimeIntervalWrite,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> TimeIntervalRead:
    _check_name(name, "time interval")
    written = await alerting.write(
        principal,
        if_match,
        service.put_time_interval(name, body.time_intervals),
        service.time_interval_focus(name),
    )
    entry, created = written.value
    set_etag(response, written.snapshot.version)
    response.status_code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
    return TimeIntervalRead(name=name, time_intervals=entry["time_intervals"])


@router.delete(
    "/time-intervals/{name}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=error_responses(404, 409, 412),
)
async def delete_time_interval(
    principal: TenantAdmin,
    name: str,
    alerting: AlertingDep,
    response: Response,
    if_match: IfMatch = None,
) -> None:
    _check_name(name, "time interval")
    written = await alerting.write(
        principal,
        if_match,
        service.delete_time_interval(name),
    )
    set_etag(response, written.snapshot.version)
