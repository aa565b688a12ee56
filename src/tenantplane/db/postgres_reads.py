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
from tenantplane.db.read_queue import Read, ReadQueue
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
        self._queue = ReadQueue(size, timeout_seconds)
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
        # The next read opens a new pool, with a queue of its own (_opened_pool).
        pool, self._pool, self._opening, self._loop = self._pool, None, None, None
        self._cursors.clear()
        if pool is not None:
            await pool.close()

    async def drop_ended_connections(self) -> None:
        """Check each idle connection now (a round trip each) and replace those the server
        ended; connections in use are replaced as they come back broken."""
        if self._pool is None or self._loop is not asyncio.get_running_loop():
            return  # none opened (in this event loop): none to check
        pool = await self._opened_pool()
        await pool.check()

    async def _run(
        self,
        statements: list[tuple[Executable, Parameters]],
        *,
        single: bool = False,
        snapshot: bool = False,
    ) -> list[Sequence[ReadRow]]:
        prepared = [(self._prepared.of(statement), values) for statement, values in statements]
        pool = await self._opened_pool()
        read = Read(prepared, single=single, snapshot=snapshot)
        queue = self._queue
        if queue.admits():
            # A connection is free: the read runs at once, in this task, as a read always did.
            # Reads queued meanwhile are left to a task of their own (it takes this slot).
            try:
                return await self._answer_one(pool, read)
            finally:
                queue.leave(lambda: self._drain(pool, queue))
        return await queue.wait(read, self._timed_out)

    async def _drain(self, pool: AsyncConnectionPool, queue: ReadQueue) -> None:
        """Answer the queued reads, batch after batch, until none is left (the pool and
        queue of the read that handed its slot over: not those of a later pool)."""
        try:
            while batch := queue.take():
                try:
                    results = await self._answer_batch(pool, batch)
                except Exception as exc:  # each waiting read is given it
                    for read in batch:
                        read.fail(exc)
                    continue
                except BaseException:
                    for read in batch:
                        read.cancel()  # cancelled with this task (the loop is closing)
                    raise
                for read, rows in zip(batch, results, strict=True):
                    read.settle(rows)
        finally:
            queue.leave(None)

    async def _answer_batch(
        self, pool: AsyncConnectionPool, batch: list[Read]
    ) -> list[list[Sequence[ReadRow]] | BaseException]:
        connection = await self._connection(pool)
        try:
            if len(batch) > 1:
                try:
                    return [[rows] for rows in await self._many(connection, batch)]
                except Exception:  # noqa: S110 - answered below, read by read
                    # One statement failed: the rest of the batch was not run. Each is run
                    # alone and given its own answer (a connection the server ended fails each).
                    pass
            return [await self._one_or_error(connection, read) for read in batch]
        finally:
            await pool.putconn(connection)

    async def _answer_one(self, pool: AsyncConnectionPool, read: Read) -> list[Sequence[ReadRow]]:
        connection = await self._connection(pool)
        try:
            return await self._statements(connection, read)
        finally:
            await pool.putconn(connection)

    async def _one_or_error(
        self, connection: psycopg.AsyncConnection[Any], read: Read
    ) -> list[Sequence[ReadRow]] | BaseException:
        try:
            return await self._statements(connection, read)
        except Exception as exc:  # the read's own answer
            return exc

    async def _connection(self, pool: AsyncConnectionPool) -> psycopg.AsyncConnection[Any]:
        # getconn and putconn, not the pool's connection() context: two context managers
        # and a commit() that sends nothing on an autocommit connection cost a tenth of
        # a read (bench/history.md, round 18).
        try:
            return await pool.getconn()
        except PoolTimeout as exc:
            raise self._timed_out() from exc

    async def _statements(
        self, connection: psycopg.AsyncConnection[Any], read: Read
    ) -> list[Sequence[ReadRow]]:
        if read.snapshot:
            async with connection.transaction():
                return [await self._rows(connection, *one) for one in read.statements]
        return [await self._rows(connection, *one, single=read.single) for one in read.statements]

    async def _many(
        self, connection: psycopg.AsyncConnection[Any], batch: list[Read]
    ) -> list[Sequence[ReadRow]]:
        """The batch's statement (the same for each read) with each read's values, sent
        together and answered in one round trip (psycopg's pipeline)."""
        prepared = batch[0].statements[0][0]
        for listener in self.listeners:
            for _ in batch:
                listener(prepared.sql)
        cursor = self._cursor(connection)
        await cursor.executemany(
            prepared.sql,
            [prepared.parameters(read.statements[0][1]) for read in batch],
            returning=True,
        )
        answers: list[Sequence[ReadRow]] = []
        for index, read in enumerate(batch):
            if index:
                cursor.nextset()
            answers.append(await self._fetched(cursor, prepared, single=read.single))
        return answers

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
            return await self._fetched(cursor, prepared, single=single)
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

    async def _fetched(
        self, cursor: psycopg.AsyncCursor[Any], prepared: Prepared, *, single: bool
    ) -> Sequence[ReadRow]:
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

    def _timed_out(self) -> SqlAlchemyPoolTimeout:
        return SqlAlchemyPoolTimeout(f"no plain-reads connection within {self._timeout:g} s")

    async def _opened_pool(self) -> AsyncConnectionPool:
        loop = asyncio.get_running_loop()
        pool, opening = self._pool, self._opening
        if pool is None or opening is None or self._loop is not loop:
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
            self._queue = ReadQueue(self._size, self._timeout)
            # Opened once for every caller (``open`` takes the pool's lock: not on each read;
            # awaiting the finished task costs nothing).
            opening = loop.create_task(pool.open())
            self._pool, self._opening, self._loop = pool, opening, loop
        await opening
        return pool


async def _configure(connection: psycopg.AsyncConnection[Any]) -> None:
    # A snapshot (several statements that must agree) is one REPEATABLE READ transaction; a
    # single statement runs outside any (autocommit), so this is all it changes.
    await connection.set_isolation_level(psycopg.IsolationLevel.REPEATABLE_READ)
    # The JSON columns these reads return are the service's own documents: orjson decodes
    # them several times faster than the standard library.
    set_json_loads(orjson.loads, connection)
