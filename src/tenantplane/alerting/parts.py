"""The parts of a tenant's Alertmanager document the API addresses by name, as data.

Four collections (receivers, the root route's child routes, template files, time intervals)
are listed, read, put and deleted item by item; two sections (the root route, global) are
read and replaced whole. routes.py makes the same handlers from every row, so what differs
between them is all here: another collection is another row of ``COLLECTIONS``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from tenantplane.alerting import service
from tenantplane.alerting.document import Document, named_index
from tenantplane.alerting.openapi import (
    AlertingGlobalConfig,
    AlertingReceiver,
    AlertingReceiverList,
    AlertingRoute,
    AlertingRouteList,
)
from tenantplane.alerting.redaction import redact_global, redact_receiver
from tenantplane.alerting.schemas import (
    TemplateList,
    TemplateRead,
    TimeIntervalList,
    TimeIntervalRead,
    template_write,
    time_interval_write,
)
from tenantplane.alerting.service import Focus
from tenantplane.alerting.validation import ConfigError
from tenantplane.alerting.validation.limits import check_name
from tenantplane.http.errors import ValidationFailed

Change = Callable[[Document], Any]


@dataclass(frozen=True)
class Docs:
    """Each operation's docstring: its first line is the summary in the OpenAPI document."""

    list: str
    get: str
    put: str
    delete: str


@dataclass(frozen=True)
class Collection:
    """Items of the document addressed as ``/{path}/{param}`` (item operations named after
    ``what``: get_time_interval → getTimeInterval; the list after ``path``)."""

    path: str
    param: str
    what: str  # "time interval": in operation names and in 404s ("time interval oncall")
    key: Callable[[str], Any]  # the path parameter, checked (400) and converted
    items: Callable[[Document, bool], list[Any]]  # the list as an admin (True) or member reads it
    find: Callable[[Document, Any], Any]  # the stored item, None when there is none
    show: Callable[[Any, Any, bool], Any]  # (key, stored item, admin) → the response body
    put: Callable[[Any, Any], Callable[[Document], tuple[Any, bool]]]  # → (item, created)
    focus: Callable[[Any], Focus | Callable[[Document], Focus]]  # where a PUT body's errors lie
    delete: Callable[[Any], Change]
    model: type[BaseModel]  # an item's schema
    list_model: type[BaseModel]
    docs: Docs
    # An item's identity for paging (http/paging.py, in stored order): (the configuration's
    # version, the item's position, the listed item) → a string. Named items are their name;
    # a route is its position in one version of the configuration.
    identity: Callable[[str, int, Any], str]
    # The PUT body's dependency: None takes a JSON object, checked by the validation package
    # and described by ``model``; else FastAPI parses a typed input model and serialises
    # responses as ``model``.
    body: Callable[..., Awaitable[Any]] | None = None
    delete_errors: tuple[int, ...] = (404, 412)


@dataclass(frozen=True)
class Section:
    """A part read and replaced whole at ``/{path}``; ``name`` names its operations."""

    path: str
    name: str
    section: str  # its key in the document
    show: Callable[[Any, bool], Any]  # (stored section, admin) → the response body
    put: Callable[[Any], Change]  # returns what the PUT answers
    model: type[BaseModel]
    get_doc: str
    put_doc: str


_ROUTE_INDEX = re.compile(r"^[0-9]{1,6}$")


def checked_name(what: str) -> Callable[[str], str]:
    """The same rule as names inside a body (validation.limits), so every name stored
    through `PUT /config` is addressable by its own path, and the reverse."""

    def check(value: str) -> str:
        try:
            check_name(value, "name", what)
        except ConfigError as exc:
            raise ValidationFailed(exc.message, field="name", code=exc.code) from None
        return value

    return check


def route_index(value: str) -> int:
    """A child route's 0-based index, named `id` on the wire."""
    if not _ROUTE_INDEX.fullmatch(value):
        raise ValidationFailed(
            "invalid route id: a 0-based integer index", field="id", code="INVALID_ID"
        )
    return int(value)


def named(section: str) -> Callable[[Document, str], Any]:
    def find(document: Document, name: str) -> Any:
        index = named_index(document, section, name)
        return None if index is None else document[section][index]

    return find


def _child_route(document: Document, index: int) -> Any:
    routes = document["route"].get("routes", [])
    return routes[index] if index < len(routes) else None


def _by_name(_version: str, _position: int, item: Any) -> str:
    return str(item["name"])


def _receiver(_name: str, receiver: Any, admin: bool) -> Any:
    return receiver if admin else redact_receiver(receiver)


def _template(filename: str, contents: str, _admin: bool) -> TemplateRead:
    return TemplateRead(filename=filename, contents=contents)


def _time_interval(name: str, entry: Any, _admin: bool) -> TimeIntervalRead:
    return TimeIntervalRead(name=name, time_intervals=entry.get("time_intervals", []))


COLLECTIONS = (
    Collection(
        path="receivers",
        param="name",
        what="receiver",
        key=checked_name("receiver"),
        items=lambda document, admin: (
            document["receivers"] if admin else list(map(redact_receiver, document["receivers"]))
        ),
        find=named("receivers"),
        show=_receiver,
        put=service.upsert_receiver,
        focus=service.receiver_focus,
        delete=service.delete_receiver,
        model=AlertingReceiver,
        list_model=AlertingReceiverList,
        identity=_by_name,
        docs=Docs(
            list="Every receiver with its integrations, in stored order (credentials read "
            "`<secret>`\nunless the caller is an admin).",
            get="The receiver called `name` (credentials read `<secret>` unless the caller "
            "is an\nadmin).",
            put="201 when created, 200 when replaced; the path's name wins over `name` in "
            "the body.",
            delete="409 `RECEIVER_IN_USE` while a route refers to it.",
        ),
        delete_errors=(404, 409, 412),
    ),
    Collection(
        path="routes",
        param="id",
        what="route",
        key=route_index,
        items=lambda document, _admin: document["route"].get("routes", []),
        find=_child_route,
        show=lambda _index, route, _admin: route,
        put=service.put_route,
        focus=lambda index: Focus(f"route.routes[{index}]"),
        delete=service.delete_route,
        model=AlertingRoute,
        list_model=AlertingRouteList,
        identity=lambda version, position, _route: f"{version}:{position}",
        docs=Docs(
            list="Child routes in order; their index is the `id` of the item endpoints.",
            get="The child route at 0-based index `id`, with its own nested routes.",
            put="200 replacing index `id`; 201 appending when `id` equals the count; 400 beyond.",
            delete="Later child routes move up one index.",
        ),
    ),
    Collection(
        path="templates",
        param="filename",
        what="template",
        key=str,
        items=lambda document, admin: [
            _template(name, contents, admin).model_dump(by_alias=True)
            for name, contents in sorted(document["templates"].items())
        ],
        find=lambda document, filename: document["templates"].get(filename),
        show=_template,
        put=lambda filename, body: service.put_template(filename, body.contents),
        focus=lambda filename: Focus(f"templates.{filename}", whole="contents"),
        delete=service.delete_template,
        model=TemplateRead,
        list_model=TemplateList,
        identity=lambda _version, _position, template: str(template["filename"]),
        docs=Docs(
            list="Every template file with its contents, sorted by file name.",
            get="The file's name and contents.",
            put="201 when created, 200 when replaced; at most 256 KiB, parsed as a Go template.",
            delete="The file is removed from the configuration.",
        ),
        body=template_write,
    ),
    Collection(
        path="time-intervals",
        param="name",
        what="time interval",
        key=checked_name("time interval"),
        items=lambda document, _admin: document["time_intervals"],
        find=named("time_intervals"),
        show=_time_interval,
        put=lambda name, body: service.put_time_interval(name, body.time_intervals),
        focus=service.time_interval_focus,
        delete=service.delete_time_interval,
        model=TimeIntervalRead,
        list_model=TimeIntervalList,
        identity=_by_name,
        docs=Docs(
            list="Every named time interval, in stored order.",
            get="The named time interval's definitions.",
            put="201 when created, 200 when replaced; the path's name is authoritative.",
            delete="409 `TIME_INTERVAL_IN_USE` while a route refers to it.",
        ),
        body=time_interval_write,
        delete_errors=(404, 409, 412),
    ),
)

SECTIONS = (
    Section(
        path="route",
        name="root_route",
        section="route",
        show=lambda route, _admin: route,
        put=service.put_root_route,
        model=AlertingRoute,
        get_doc="The root route, children included.",
        put_doc="Children are kept unless the body has `routes`, which then replaces them.",
    ),
    Section(
        path="global",
        name="global",
        section="global",
        show=lambda glob, admin: glob if admin else redact_global(glob),
        put=service.put_global,
        model=AlertingGlobalConfig,
        get_doc="Only the settings the tenant set (credentials read `<secret>` unless the "
        "caller is\nan admin).",
        put_doc="The section is replaced whole.",
    ),
)
