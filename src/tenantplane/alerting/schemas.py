"""Request bodies of the alerting endpoints.

Receivers, routes, the global section and time intervals keep Alertmanager's own
snake_case schema (the spec's tables use it), so they are taken as JSON objects and
checked by the validation package rather than by pydantic models.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request
from pydantic import ConfigDict, WithJsonSchema

from tenantplane.http.errors import ValidationFailed
from tenantplane.http.schemas import Continue, InputModel, OutputModel


async def json_object(request: Request) -> dict[str, Any]:
    """The body as a plain JSON object, checked afterwards by the validation package
    (which owns the error messages). Read here rather than as a body parameter so that
    the operation's `openapi_extra` alone declares the body's typed schema."""
    try:
        body = await request.json()
    except ValueError:
        raise ValidationFailed(
            "request body is not valid JSON", field=None, code="MALFORMED_JSON"
        ) from None
    if not isinstance(body, dict):
        raise ValidationFailed("request body must be a JSON object", field=None)
    return body


JsonObject = Annotated[dict[str, Any], Depends(json_object)]
# The same for the entries of a time interval, described by the typed component.
_ENTRIES = WithJsonSchema(
    {"type": "array", "items": {"$ref": "#/components/schemas/AlertingTimeIntervalEntry"}}
)
TimeIntervalEntries = Annotated[list[Any], _ENTRIES]


class TemplateWrite(InputModel):
    contents: str  # size and nesting limits: validation.gotemplate, on every write path


async def template_write(body: TemplateWrite) -> TemplateWrite:
    """The body as a dependency, as `json_object` is: routes.py makes one PUT handler for
    every collection and takes each one's body through its own dependency."""
    return body


class TemplateRead(OutputModel):
    filename: str
    contents: str


class TimeIntervalWrite(InputModel):
    model_config = ConfigDict(alias_generator=None)

    time_intervals: TimeIntervalEntries
    name: str | None = None  # the path's name is authoritative


async def time_interval_write(body: TimeIntervalWrite) -> TimeIntervalWrite:
    """The body as a dependency (see `template_write`)."""
    return body


class TimeIntervalRead(OutputModel):
    model_config = ConfigDict(alias_generator=None, serialize_by_alias=False)

    name: str
    time_intervals: TimeIntervalEntries


class TimeIntervalList(OutputModel):
    model_config = ConfigDict(alias_generator=None, serialize_by_alias=False)

    items: list[TimeIntervalRead]
    continue_: Continue = None


class TemplateList(OutputModel):
    items: list[TemplateRead]
    continue_: Continue = None
