"""Plain reads: Core statements answered as rows, with no ORM session and no write lock.

A poll (a GET in a loop from a CLI, Terraform or a dashboard) is the request the service
answers most. What it costs is mostly the hand-offs around its one statement, not the
statement (bench/history.md): on SQLite each aiosqlite call is a hop to the connection's
thread and back, on PostgreSQL a transaction is three round trips (BEGIN, the statement,
ROLLBACK). So reads take the shortest path each backend allows:

- SQLite: sqlite3 itself, a ``query_only`` connection of the same file per thread, used on
  the event loop (db/sqlite_reads.py). A WAL reader waits for nobody (writers append to the
  log; readers see the last commit), so a point read blocks the loop for tens of
  microseconds, against hundreds for the hops it saves.
- PostgreSQL: psycopg's own small pool of autocommit, read-only connections, the statements
  compiled once by SQLAlchemy (db/postgres_reads.py): a statement is one round trip and sees
  the last commit. ``snapshot`` reads (several statements that must agree) run in one
  read-only REPEATABLE READ transaction.

Statements are built once, at import, with named ``bindparam``s, and executed with their
values: each is compiled once by SQLAlchemy, which also converts its values
(db/compiled.py); a statement built per request would be compiled again each time.

Reads that decide a write (plan limits, If-Match, uniqueness) stay in the request's session,
inside its transaction and under its locks; these are for answering GETs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from sqlalchemy import ColumnElement, Select, String, cast, literal_column, select, type_coerce
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import QueryableAttribute
from sqlalchemy.sql import Executable
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import NullType

Parameters = Mapping[str, Any]


class ReadRow(Protocol):
    """A row read by its columns' names (``row.name``) or positions: SQLAlchemy's ``Row``,
    or a named tuple of the same values (PostgreSQL)."""

    def __getattr__(self, name: str) -> Any: ...

    def __getitem__(self, index: int) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...


def as_stored(column: QueryableAttribute[Any]) -> ColumnElement[Any]:
    """``column`` as the driver returns it, without its type's conversion (a value compared,
    never shown: a timestamp is not parsed into a datetime), under its own name."""
    return type_coerce(column, NullType()).label(column.key)


def digest_of(versions: Select[Any]) -> Select[Any]:
    """One row, one string that stands for every row of ``versions`` (a list's id,
    resource_version, name and created_at as stored, each NOT NULL; http/documents.py): two
    equal strings are two reads of the same rows. Each row is ``id:version:name:created`` and
    rows are joined by commas; ids and versions are integers, names are DNS labels and a
    stored timestamp holds no comma, so the string can be read back into its rows only one
    way. The server builds it, however long the list: one short row crosses to the service.
    ``None`` for an empty list."""
    rows = versions.subquery()
    colon = literal_column("':'", String)
    parts = [cast(column, String) for column in rows.columns]
    row: ColumnElement[str] = parts[0]
    for part in parts[1:]:
        row = row + colon + part
    return select(_JoinedRows(row))


class _JoinedRows(FunctionElement[str]):
    """The rows' strings joined by commas (``aggregate_strings`` sends its separator as a
    value bound at execution, which a plain read cannot hold: db/compiled.py)."""

    type = String()
    inherit_cache = True


@compiles(_JoinedRows)
def _group_concat(element: _JoinedRows, compiler: SQLCompiler, **options: Any) -> str:
    return f"group_concat({compiler.process(element.clauses, **options)}, ',')"


@compiles(_JoinedRows, "postgresql")
def _string_agg(element: _JoinedRows, compiler: SQLCompiler, **options: Any) -> str:
    return f"string_agg({compiler.process(element.clauses, **options)}, ',')"


class Reads(Protocol):
    async def first(self, statement: Executable, parameters: Parameters) -> ReadRow | None:
        """The first row of ``statement`` with ``parameters``, or None."""

    async def all(self, statement: Executable, parameters: Parameters) -> Sequence[ReadRow]:
        """Every row of ``statement`` with ``parameters``."""

    async def snapshot(self, *statements: tuple[Executable, Parameters]) -> list[Sequence[ReadRow]]:
        """The rows of each statement, all read from one consistent snapshot."""

    async def dispose(self) -> None:
        """Close the pooled connections."""

    async def drop_ended_connections(self) -> None:
        """Close the idle connections the server has ended (db/lost_connections.py)."""


class EngineReads:
    """Reads through an engine's own connections: an in-memory SQLite database, which exists
    only in its one connection (tests, ``--database sqlite://``)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def first(self, statement: Executable, parameters: Parameters) -> ReadRow | None:
        async with self.engine.connect() as connection:
            return (await connection.execute(statement, parameters)).first()

    async def all(self, statement: Executable, parameters: Parameters) -> Sequence[ReadRow]:
        async with self.engine.connect() as connection:
            return (await connection.execute(statement, parameters)).all()

    async def snapshot(self, *statements: tuple[Executable, Parameters]) -> list[Sequence[ReadRow]]:
        async with self.engine.connect() as connection, connection.begin():
            return [(await connection.execute(*statement)).all() for statement in statements]

    async def dispose(self) -> None:
        await self.engine.dispose()

    async def drop_ended_connections(self) -> None:
        """In-memory SQLite: no server to end them."""


def sqlite_read_url(async_url: str) -> str:
    """The synchronous driver's URL of the same SQLite file."""
    return make_url(async_url).set(drivername="sqlite+pysqlite").render_as_string(False)
