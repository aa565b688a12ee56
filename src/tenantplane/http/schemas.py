"""Base models (camelCase on the wire, unknown input fields rejected) and the one
representation of a timestamp, in and out."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Generic, TypeVar

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, PlainSerializer
from pydantic.alias_generators import to_camel
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


class ItemList(OutputModel, Generic[T]):
    items: list[T]
