"""Base models (camelCase on the wire, unknown input fields rejected) and the one
representation of a timestamp, in and out."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Generic, TypeVar

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, PlainSerializer
from pydantic.alias_generators import to_camel
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from tenantplane.db.base import rfc3339


def to_utc(value: datetime) -> datetime:
    """An aware input timestamp moved to UTC; 400 when UTC has no such date (year 10000)."""
    try:
        return value.astimezone(UTC)
    except OverflowError:
        # The error type is the envelope's code (see errors.validation_error).
        raise PydanticCustomError(
            "DATETIME_OUT_OF_RANGE",
            "is outside the representable range (years 1-9999 in UTC)",
        ) from None


# Every timestamp of every response: one type, one rendering (``2030-01-01T00:00:00Z``).
UtcDateTime = Annotated[datetime, PlainSerializer(rfc3339, return_type=str, when_used="json")]
# Every timestamp a request carries: a time zone is required; kept in UTC from then on.
InputDateTime = Annotated[AwareDatetime, AfterValidator(to_utc)]


class InputModel(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=False,
        str_strip_whitespace=False,
    )


class OutputModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=True,
        serialize_by_alias=True,
    )


T = TypeVar("T")


def _absent(value: object) -> bool:
    return value is None


# A list page's ``continue`` field (http/paging.py): there when more items remain, absent
# (not null) on the last page.
Continue = Annotated[
    str | SkipJsonSchema[None],
    Field(
        alias="continue",
        exclude_if=_absent,
        description="Present when more items remain: pass it as `continue` for the next page.",
    ),
]


class ItemList(OutputModel, Generic[T]):
    items: list[T]


class PagedList(ItemList[T], Generic[T]):
    """A list that pages (http/paging.py); invoices do not (the spec: the full history)."""

    continue_: Continue = None
