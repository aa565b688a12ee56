"""Declarative base, naming convention and column helpers shared by every feature's models."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from sqlalchemy import DateTime, Integer, MetaData, TypeDecorator
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, declared_attr, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC timestamps on every backend (SQLite stores naive values)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UTCDateTime()}


class Versioned:
    """A row whose resourceVersion is bumped by every ORM update (optimistic locking)."""

    resource_version: Mapped[int] = mapped_column(Integer, nullable=False)

    @declared_attr.directive
    def __mapper_args__(cls) -> dict[str, Any]:
        return {"version_id_col": cls.__table__.c.resource_version}  # type: ignore[attr-defined]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def epoch_microseconds(instant: datetime | str) -> int:
    """``instant`` in microseconds since the epoch: an exact, comparable form of a timestamp
    (a list's sort key, a token's claim). Naive values are UTC, as is SQLite's stored text
    (a column read as stored, db/reads.py ``as_stored``)."""
    if isinstance(instant, str):
        instant = datetime.fromisoformat(instant)
    aware = instant if instant.tzinfo is not None else instant.replace(tzinfo=UTC)
    return (aware - _EPOCH) // timedelta(microseconds=1)


def from_epoch_microseconds(value: int) -> datetime:
    return _EPOCH + timedelta(microseconds=value)


def parse_rfc3339(value: str) -> datetime:
    """An RFC 3339 timestamp: a date, ``T``, a time and its offset (``Z`` or ``±hh:mm``);
    ValueError for anything else (a date alone, a time without its offset)."""
    parsed = datetime.fromisoformat(value.replace("z", "Z").replace("Z", "+00:00"))
    if parsed.tzinfo is None or "T" not in value.upper():
        raise ValueError(f"not an RFC 3339 timestamp with an offset: {value!r}")
    return parsed


def rfc3339(value: datetime) -> str:
    """The API's one rendering of a timestamp: UTC with ``Z`` (naive values are UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
