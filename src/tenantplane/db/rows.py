"""Many rows written in one statement whose text does not depend on their number.

SQLAlchemy sends N rows as one INSERT with N groups of parameters (insertmanyvalues) or
as an executemany of N UPDATEs. On PostgreSQL the text of the first changes with N, and
both carry a parameter per value: psycopg parses such a statement's placeholders every
time (it caches statements of at most 50 parameters) and never prepares it, and the
executemany goes through its pipeline a row at a time. In the reconcilers' batches these
writes were a third of the worker's CPU (bench/history.md, round 15). Here the rows go as
one JSON parameter that PostgreSQL reads with ``json_to_recordset``: the statement's text
depends on its columns only, so it is parsed once and prepared after a few uses.

SQLite runs the usual statements: a statement there is no round trip, and its driver's
executemany loops in C.

Values are what JSON carries, aware datetimes (a naive one is refused, as by
``UTCDateTime``) and Decimals (as their canonical text, as ``DecimalString`` keeps them);
the columns' own bind processing is not applied on PostgreSQL, so the tables written here
hold plain columns. A column the rows leave out takes its scalar default (``default=""``),
as an ORM insert gives it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

import orjson
from sqlalchemy import Update, bindparam, cast, column, func, literal, select, update
from sqlalchemy.dialects.postgresql import JSON
from sqlalchemy.dialects.postgresql import Insert as PostgresInsert
from sqlalchemy.dialects.postgresql import insert as postgres_insert
from sqlalchemy.dialects.sqlite import Insert as SQLiteInsert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.expression import TableValuedAlias
from sqlalchemy.sql.schema import ScalarElementColumnDefault, Table

#: The name of the one parameter of the statements built here.
ROWS = "rows"


def encode_json(value: Any) -> str:
    """``value`` as JSON text, for a parameter that a statement reads as JSON (the rows of
    the parameter ``ROWS``, …): times as ISO 8601 (aware only), object keys that are
    integers as text."""
    try:
        encoded = orjson.dumps(
            value,
            default=_json_value,
            option=orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_NON_STR_KEYS,
        )
    except orjson.JSONEncodeError as exc:
        # orjson reports whatever ``_json_value`` raised as its own TypeError: the cause
        # says which value and why.
        if exc.__cause__ is not None:
            raise exc.__cause__ from None
        raise
    return encoded.decode()


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not written as a JSON row")


@functools.lru_cache(maxsize=64)
def _json_recordset(table: Table, columns: tuple[str, ...]) -> TableValuedAlias:
    """``json_to_recordset(CAST(:rows AS json)) AS r(<column> <type>, …)`` with ``table``'s
    types for ``columns`` (PostgreSQL)."""
    function = func.json_to_recordset(cast(bindparam(ROWS), JSON))
    typed = [column(name, table.c[name].type) for name in columns]
    return function.table_valued(*typed).render_derived(name="r", with_types=True)


@functools.lru_cache(maxsize=64)
def insert_from_json(table: Table, columns: tuple[str, ...]) -> PostgresInsert:
    """``INSERT INTO table (columns) SELECT … FROM _json_recordset`` (PostgreSQL); one row per
    element of the parameter ``ROWS``. The table's columns that ``columns`` leave out and
    that have a scalar default are given it (INSERT … SELECT applies only server defaults)."""
    rows = _json_recordset(table, columns)
    defaults = {
        name: literal(column.default.arg, column.type)
        for name, column in table.c.items()
        if name not in columns and isinstance(column.default, ScalarElementColumnDefault)
    }
    source = select(*rows.c, *defaults.values())
    return postgres_insert(table).from_select([*columns, *defaults], source)


@functools.lru_cache(maxsize=64)
def _update_from_json(table: Table, columns: tuple[str, ...]) -> Update:
    rows = _json_recordset(table, columns)
    keys = [key.name for key in table.primary_key.columns]
    return (
        update(table)
        .values({name: rows.c[name] for name in columns if name not in keys})
        .where(*(table.c[name] == rows.c[name] for name in keys))
    )


@functools.lru_cache(maxsize=64)
def _update_each_row(table: Table, columns: tuple[str, ...]) -> Update:
    keys = [key.name for key in table.primary_key.columns]
    return (
        update(table)
        .values({name: bindparam(name) for name in columns if name not in keys})
        .where(*(table.c[name] == bindparam(f"key_{name}") for name in keys))
    )


def insert_of_rows(
    session: AsyncSession, table: Table, rows: Sequence[dict[str, Any]]
) -> tuple[PostgresInsert | SQLiteInsert, Any]:
    """An INSERT of ``rows`` (each with the same columns, at least one) and its parameters
    for the session's database: on PostgreSQL ``insert_from_json`` with the rows as one JSON
    parameter, on SQLite the rows as the statement's parameters. Either takes ``ON
    CONFLICT`` and ``RETURNING`` from the caller."""
    if _is_postgresql(session):
        return insert_from_json(table, tuple(rows[0])), {ROWS: encode_json(rows)}
    return sqlite_insert(table), list(rows)


async def insert_rows(session: AsyncSession, table: Table, rows: Sequence[dict[str, Any]]) -> None:
    """Insert ``rows`` (each with the same columns) in one statement."""
    if rows:
        await session.execute(*insert_of_rows(session, table, rows))


async def update_rows(session: AsyncSession, table: Table, rows: Sequence[dict[str, Any]]) -> None:
    """Update each of ``rows`` (each with the same columns, the primary key's among them),
    found by its primary key, in one statement."""
    if not rows:
        return
    columns = tuple(rows[0])
    if _is_postgresql(session):
        await session.execute(_update_from_json(table, columns), {ROWS: encode_json(rows)})
        return
    keys = {key.name for key in table.primary_key.columns}
    parameters = [
        {f"key_{name}" if name in keys else name: value for name, value in row.items()}
        for row in rows
    ]
    await session.execute(_update_each_row(table, columns), parameters)


def _is_postgresql(session: AsyncSession) -> bool:
    return session.get_bind().dialect.name == "postgresql"
