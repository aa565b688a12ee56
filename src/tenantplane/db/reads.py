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

from sqlalchemy import ColumnElement, type_coerce
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.orm import QueryableAttribute
from sqlalchemy.sql import Executable
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
