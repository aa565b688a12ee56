"""One-statement writes: a write whose whole transaction is a single statement, sent alone.

The most frequent write of automation, creating a resource with nothing to look up first,
is one INSERT that also takes the tenant's state lock and checks the state (``INSERT …
SELECT … WHERE <state> = 'active'``). In the request's session it costs four round trips
(BEGIN, the state, the INSERT, COMMIT) and SQLAlchemy's asyncio adaptation of each; sent on
its own it is one, and most of a create's CPU in the API process was that adaptation
(bench/history.md, round 12).

- PostgreSQL: autocommit connections of a small psycopg pool of their own (the plain reads'
  are read-only), the statement compiled once by SQLAlchemy (db/compiled.py): the statement
  is its own transaction, so its locks are held until it ends and a NOTIFY it sends is
  delivered when it commits.
- SQLite: a transaction of its own through the engine, at the write gate like any other
  (its cost is not round trips).

Errors are SQLAlchemy's (``IntegrityError`` for a unique key taken, …), classified and
answered like any other database error (db/errors.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql import Executable

from tenantplane.db.postgres_reads import PostgresReads
from tenantplane.db.reads import Parameters, ReadRow


class Writes(Protocol):
    @property
    def is_postgresql(self) -> bool:
        """Whether statements run on PostgreSQL (their SQL may differ by backend)."""

    async def returning(self, statement: Executable, parameters: Parameters) -> ReadRow | None:
        """Run ``statement`` (a write with a RETURNING clause) as a transaction of its own;
        the first row it returned, or None when it wrote nothing."""

    async def dispose(self) -> None:
        """Close the pooled connections."""

    async def drop_ended_connections(self) -> None:
        """Close the idle connections the server has ended (db/lost_connections.py)."""


class PostgresWrites:
    """One-statement writes over psycopg's pool of autocommit connections (see the module)."""

    is_postgresql = True

    def __init__(self, pool: PostgresReads) -> None:
        self._pool = pool

    @property
    def listeners(self) -> list[Callable[[str], None]]:
        """Called with the SQL of each statement before it is sent (tests count them)."""
        return self._pool.listeners

    async def returning(self, statement: Executable, parameters: Parameters) -> ReadRow | None:
        return await self._pool.first(statement, parameters)

    async def dispose(self) -> None:
        await self._pool.dispose()

    async def drop_ended_connections(self) -> None:
        await self._pool.drop_ended_connections()


class EngineWrites:
    """One-statement writes through an engine: SQLite, where a transaction costs no round
    trips and the write gate orders it with the process's other writers."""

    is_postgresql = False

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def returning(self, statement: Executable, parameters: Parameters) -> ReadRow | None:
        async with self.engine.begin() as connection:
            return (await connection.execute(statement, parameters)).first()

    async def dispose(self) -> None:
        """The engine is the database's own: disposed with it."""

    async def drop_ended_connections(self) -> None:
        """SQLite: no server to end them."""
