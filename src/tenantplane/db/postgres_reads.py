"""Plain reads on PostgreSQL: psycopg's own pool, statements compiled once by SQLAlchemy.

A plain read (db/reads.py) through SQLAlchemy's asyncio engine costs about three times the
CPU of the same statement sent with psycopg directly (bench/history.md): each execute runs
in a greenlet of its own, the pooled connection is checked out and returned through two
more, and the result's description is rebuilt on every row set. For the handful of
statements that answer polls, that adaptation was the larger part of a request.

So these statements take the direct path, compiled once by SQLAlchemy, their values
converted by its processors (db/compiled.py).

Errors are raised as SQLAlchemy's (``DBAPIError`` and its pool ``TimeoutError``), so they
are classified and answered exactly like any other database error (db/errors.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import orjson
import psycopg
from psycopg.types.json import set_json_loads
from psycopg_pool import AsyncConnectionPool, PoolTimeout
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as SqlAlchemyPoolTimeout
from sqlalchemy.sql import Executable

from tenantplane.db.compiled import Prepared, PreparedStatements
from tenantplane.db.reads import Parameters, ReadRow


class PostgresReads:
    """Reads over psycopg's pool of autocommit, read-only connections (see the module)."""

    def __init__(
        self,
        dsn: str,
        dialect: Dialect,
        *,
        size: int,
        timeout_seconds: float,
        connect_timeout_seconds: int,
        session_options: str,
    ) -> None:
        self.dialect = dialect
        self._dsn = dsn
        self._size = size
        self._timeout = timeout_seconds
        # Every transaction of these connections is read-only: a write cannot go through them
        # even by mistake.
        self._connect = {
            "autocommit": True,
            "connect_timeout": connect_timeout_seconds,
            "options": f"{session_options} -c default_transaction_read_only=on".strip(),
        }
        self._prepared = PreparedStatements(dialect)
        self._cursors: dict[psycopg.AsyncConnection[Any], psycopg.AsyncCursor[Any]] = {}
        self._pool: AsyncConnectionPool | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Task[None] | None = None
        self._gate: asyncio.Semaphore | None = None
        # Called with the SQL of each statement before it is sent (tests count them).
        self.listeners: list[Callable[[str], None]] = []

    async def first(self, statement: Executable, parameters: Parameters) -> ReadRow | None:
        rows = await self._run([(statement, parameters)], single=True)
        return rows[0][0] if rows[0] else None

    async def all(self, statement: Executable, parameters: Parameters) -> Sequence[ReadRow]:
        return (await self._run([(statement, parameters)]))[0]

    async def snapshot(self, *statements: tuple[Executable, Parameters]) -> list[Sequence[ReadRow]]:
        return await self._run(list(statements), snapshot=True)

    async def dispose(self) -> None:
        pool, self._pool, self._gate, self._opening, self._loop = self._pool, None, None, None, None
        self._cursors.clear()
        if pool is not None:
            await pool.close()

    async def drop_ended_connections(self) -> None:
        """Check each idle connection now (a round trip each) and replace those the server
        ended; connections in use are replaced as they come back broken."""
        if self._pool is None or self._loop is not asyncio.get_running_loop():
            return  # none opened (in this event loop): none to check
        pool, _ = await self._opened_pool()
        await pool.check()

    async def _run(
        self,
        statements: list[tuple[Executable, Parameters]],
        *,
        single: bool = False,
        snapshot: bool = False,
    ) -> list[Sequence[ReadRow]]:
        prepared = [(self._prepared.of(statement), values) for statement, values in statements]
        pool, gate = await self._opened_pool()
        await self._admitted(gate)
        try:
            # getconn and putconn, not the pool's connection() context: two context managers
            # and a commit() that sends nothing on an autocommit connection cost a tenth of
            # a read (bench/history.md, round 18).
            try:
                connection = await pool.getconn()
            except PoolTimeout as exc:
                raise self._timed_out() from exc
            try:
                if snapshot:
                    async with connection.transaction():
                        return [await self._rows(connection, *one) for one in prepared]
                return [await self._rows(connection, *one, single=single) for one in prepared]
            finally:
                await pool.putconn(connection)
        finally:
            gate.release()

    async def _rows(
        self,
        connection: psycopg.AsyncConnection[Any],
        prepared: Prepared,
        values: Parameters,
        *,
        single: bool = False,
    ) -> Sequence[ReadRow]:
        for listener in self.listeners:
            listener(prepared.sql)
        try:
            cursor = self._cursor(connection)
            await cursor.execute(prepared.sql, prepared.parameters(values))
            make = prepared.rows
            if make is None:
                # psycopg builds a cursor's description anew on each access: only the
                # statement's first result reads it.
                description = cursor.description
                if description is None:
                    return []
                make = prepared.row_maker(
                    [column.name for column in description],
                    [column.type_code for column in description],
                    self.dialect,
                )
            if single:
                found = await cursor.fetchone()
                return [] if found is None else [make(found)]
            return [make(row) for row in await cursor.fetchall()]
        except psycopg.Error as exc:
            # A connection the server ended is ``broken``: the caller tells every pool of
            # the process (Database.connections_lost, db/lost_connections.py).
            raise DBAPIError.instance(
                prepared.sql,
                dict(values),
                exc,
                psycopg.Error,
                hide_parameters=True,
                connection_invalidated=connection.broken,
                dialect=self.dialect,
            ) from exc

    def _cursor(self, connection: psycopg.AsyncConnection[Any]) -> psycopg.AsyncCursor[Any]:
        """The connection's one cursor, executed again and again: a cursor made for each
        statement was a quarter of a point read's CPU (bench/history.md, round 23). A
        connection only ever runs one statement at a time (it is checked out)."""
        cursor = self._cursors.get(connection)
        if cursor is None:
            # A new connection: forget those the pool has closed since (replaced).
            for gone in [known for known in self._cursors if known.closed]:
                del self._cursors[gone]
            cursor = self._cursors[connection] = connection.cursor()
        return cursor

    async def _admitted(self, gate: asyncio.Semaphore) -> None:
        """Wait for one of the pool's connections in a plain FIFO queue: under load (many
        more polls than connections) the pool's own queue of waiters, each with its timer
        and condition, cost more CPU per read than the read, and served them less evenly
        (bench/history.md, round 4). Admitted, a read finds a connection free at once."""
        if not gate.locked():
            await gate.acquire()
            return
        try:
            async with asyncio.timeout(self._timeout):
                await gate.acquire()
        except TimeoutError as exc:
            raise self._timed_out() from exc

    def _timed_out(self) -> SqlAlchemyPoolTimeout:
        return SqlAlchemyPoolTimeout(f"no plain-reads connection within {self._timeout:g} s")

    async def _opened_pool(self) -> tuple[AsyncConnectionPool, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        pool, gate, opening = self._pool, self._gate, self._opening
        if pool is None or gate is None or opening is None or self._loop is not loop:
            # A pool belongs to the event loop that opened it (a CLI command runs its own).
            pool = AsyncConnectionPool(
                self._dsn,
                min_size=self._size,
                max_size=self._size,
                timeout=self._timeout,
                kwargs=self._connect,
                configure=_configure,
                open=False,
                name="plain-reads",
            )
            gate = asyncio.Semaphore(self._size)
            # Opened once for every caller (``open`` takes the pool's lock: not on each read;
            # awaiting the finished task costs nothing).
            opening = loop.create_task(pool.open())
            self._pool, self._gate, self._opening, self._loop = pool, gate, opening, loop
        await opening
        return pool, gate


async def _configure(connection: psycopg.AsyncConnection[Any]) -> None:
    # A snapshot (several statements that must agree) is one REPEATABLE READ transaction; a
    # single statement runs outside any (autocommit), so this is all it changes.
    await connection.set_isolation_level(psycopg.IsolationLevel.REPEATABLE_READ)
    # The JSON columns these reads return are the service's own documents: orjson decodes
    # them several times faster than the standard library.
    set_json_loads(orjson.loads, connection)
