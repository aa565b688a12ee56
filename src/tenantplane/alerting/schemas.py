"""Request bodies of the alerting endpoints.

Receivers, routes, the global section and time intervals keep Alertmanager's own
snake_case schema (the spec's tables use it), so they are taken as JSON objects and
checked by the validation package rather than by pydantic models.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body
from pydantic import ConfigDict

from tenantplane.http.schemas import InputModel, OutputModel

JsonObject = Annotated[dict[str, Any], Body()]


class TemplateWrite(InputModel):
    contents: str  # size and nesting limits: validation.gotemplate, on every write path


class TemplateRead(OutputModel):
    filename: str
    contents: str


class TimeIntervalWrite(InputModel):
    model_config = ConfigDict(alias_generator=None)

    time_intervals: list[Any]
    name: str | None = None  # the path's name is authoritative


class TimeIntervalRead(OutputModel):
    model_config = ConfigDict(alias_generator=None, serialize_by_alias=False)

    name: str
    time_intervals: list[Any]
