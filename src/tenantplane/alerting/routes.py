"""Alerting configuration endpoints: reads need membership, writes need admin.

Every response carries the wrapper ETag; every write takes an optional If-Match on it.
The whole wrapper has its own three handlers; the collections and sections the API addresses
by name (parts.py) get theirs from one factory each.

No ``from __future__ import annotations`` here: the factories' handlers annotate their path
parameter and body with the row's values, which FastAPI must see evaluated (it resolves
string annotations against module globals only).
"""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, Path, Request, Response, status
from pydantic import BaseModel

from tenantplane.access import TenantAdmin, TenantMember
from tenantplane.alerting import service
from tenantplane.alerting.dependencies import AlertingDep
from tenantplane.alerting.document import Document
from tenantplane.alerting.openapi import AlertingConfig, request_body
from tenantplane.alerting.parts import COLLECTIONS, SECTIONS, Collection, Section
from tenantplane.alerting.redaction import redact_document
from tenantplane.alerting.schemas import JsonObject, json_object
from tenantplane.alerting.service import Focus
from tenantplane.http.errors import NotFound, error_responses
from tenantplane.http.etag import NOT_MODIFIED, IfMatch, set_etag
from tenantplane.http.location import set_location
from tenantplane.http.paging import Paging, paged_in_stored_order, with_continue
from tenantplane.http.routers import PrefixedRouter

router = PrefixedRouter(prefix="/tenants/{tenant}/alerting", tags=["alerting"])

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
    written = await alerting.write(principal, if_match, service.replace_document(body))
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
    written = await alerting.write(principal, if_match, service.reset_document, reset=True)
    set_etag(response, written.snapshot.version)
    return _wrapper(written.snapshot.document)


# --- the named parts: one set of handlers per row of parts.py ---------------------------


def _add_collection(part: Collection) -> None:
    """list, get, put and delete for ``/{path}`` and ``/{path}/{param}``. Each handler checks
    its path parameter itself, after the access check, so a bad name is 400 only to a caller
    allowed to ask; the typed PUT bodies (templates, time intervals) are FastAPI's."""
    typed = part.body is not None
    noun = part.what.replace(" ", "_")

    async def list_items(
        principal: TenantMember, alerting: AlertingDep, response: Response, paging: Paging
    ) -> dict[str, Any]:
        listing = f"alerting/{part.path}"
        page = paging.page(listing, principal.tenant_id)
        snapshot = await alerting.read(principal)
        set_etag(response, snapshot.version)
        version = str(snapshot.version)
        items, last = paged_in_stored_order(
            part.items(snapshot.document, principal.is_admin),
            lambda position, item: part.identity(version, position, item),
            page,
        )
        token = paging.next_token(listing, principal.tenant_id, last)
        return with_continue({"items": items}, token)

    async def get_item(
        principal: TenantMember,
        raw_key: Annotated[str, Path(alias=part.param)],
        alerting: AlertingDep,
        response: Response,
    ) -> Any:
        key = part.key(raw_key)
        snapshot = await alerting.read(principal)
        item = part.find(snapshot.document, key)
        if item is None:
            raise NotFound(f"{part.what} {key}")
        set_etag(response, snapshot.version)
        return part.show(key, item, principal.is_admin)

    async def put_item(
        principal: TenantAdmin,
        raw_key: Annotated[str, Path(alias=part.param)],
        body: Annotated[Any, Depends(part.body or json_object)],
        alerting: AlertingDep,
        request: Request,
        response: Response,
        if_match: IfMatch = None,
    ) -> Any:
        key = part.key(raw_key)
        written = await alerting.write(principal, if_match, part.put(key, body), part.focus(key))
        item, created = written.value
        set_etag(response, written.snapshot.version)
        _created_or_replaced(request, response, created)
        return part.show(key, item, principal.is_admin)

    async def delete_item(
        principal: TenantAdmin,
        raw_key: Annotated[str, Path(alias=part.param)],
        alerting: AlertingDep,
        response: Response,
        if_match: IfMatch = None,
    ) -> None:
        key = part.key(raw_key)
        written = await alerting.write(principal, if_match, part.delete(key))
        set_etag(response, written.snapshot.version)

    path, item_path = f"/{part.path}", f"/{part.path}/{{{part.param}}}"
    _add(
        path,
        "GET",
        list_items,
        part.docs.list,
        f"list_{part.path.replace('-', '_')}",
        response_model=None,
        responses=_read_responses(part.list_model, 410),
    )
    _add(
        item_path,
        "GET",
        get_item,
        part.docs.get,
        f"get_{noun}",
        response_model=part.model if typed else None,
        responses=_read_responses(None if typed else part.model, 404),
    )
    _add(
        item_path,
        "PUT",
        put_item,
        part.docs.put,
        f"put_{noun}",
        response_model=part.model if typed else None,
        responses=_responses(part.model, 412, created=True),
        openapi_extra=None if typed else request_body(part.model),
    )
    _add(
        item_path,
        "DELETE",
        delete_item,
        part.docs.delete,
        f"delete_{noun}",
        status_code=status.HTTP_204_NO_CONTENT,
        responses=_responses(None, *part.delete_errors),
    )


def _add_section(part: Section) -> None:
    """get and put (replacing it whole) for ``/{path}``."""

    async def get_section(
        principal: TenantMember, alerting: AlertingDep, response: Response
    ) -> dict[str, Any]:
        snapshot = await alerting.read(principal)
        set_etag(response, snapshot.version)
        section: dict[str, Any] = part.show(snapshot.document[part.section], principal.is_admin)
        return section

    async def put_section(
        principal: TenantAdmin,
        body: JsonObject,
        alerting: AlertingDep,
        response: Response,
        if_match: IfMatch = None,
    ) -> dict[str, Any]:
        written = await alerting.write(principal, if_match, part.put(body), Focus(part.section))
        set_etag(response, written.snapshot.version)
        section: dict[str, Any] = written.value
        return section

    _add(
        f"/{part.path}",
        "GET",
        get_section,
        part.get_doc,
        f"get_{part.name}",
        response_model=None,
        responses=_read_responses(part.model),
    )
    _add(
        f"/{part.path}",
        "PUT",
        put_section,
        part.put_doc,
        f"put_{part.name}",
        response_model=None,
        responses=_responses(part.model, 412),
        openapi_extra=request_body(part.model),
    )


def _add(
    path: str, method: str, handler: Callable[..., Any], doc: str, name: str, **options: Any
) -> None:
    """Register ``handler`` as operation ``name`` (its operation id, http/openapi.py), with
    ``doc`` as its docstring (the operation's summary and description)."""
    handler.__doc__ = doc
    router.add_api_route(path, handler, methods=[method], name=name, **options)


for _collection in COLLECTIONS:
    _add_collection(_collection)
for _section in SECTIONS:
    _add_section(_section)
