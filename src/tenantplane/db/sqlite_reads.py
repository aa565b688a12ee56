"""Plain reads of a SQLite file: sqlite3 itself, on the caller's thread.

A WAL reader waits for nobody (writers append to the log; readers see the last commit), so
a point read is tens of microseconds of the calling thread's time: cheaper run on the event
loop than handed to a thread and back. SQLAlchemy's own execution of the same statement
cost several times the statement (a connection object checked out of its pool and returned,
its events, an execution context, a result wrapper: about 100 µs of a ~280 µs poll), so the
statements are compiled once by SQLAlchemy and sent by sqlite3 (db/compiled.py).

Each thread keeps one connection of its own (the event loop's thread: one for its life),
opened ``query_only``: it cannot write even by mistake. A connection is used within one call,
never across an ``await``. Errors are raised as SQLAlchemy's (``DBAPIError``), so they are
classified and answered like any other database error (db/errors.py): a reader refused for
longer than its busy timeout (rare: recovery of a crashed writer's log) is a 503
``DATABASE_BUSY``.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import Any

import orjson
from sqlalchemy import create_engine
from sqlalchemy.engine import Dialect, make_url
from sqlalchemy.exc import DBAPIError, StatementError
from sqlalchemy.sql import Executable

from tenantplane.db.compiled import Prepared, PreparedStatements
from tenantplane.db.reads import Parameters, ReadRow, sqlite_read_url

# A WAL reader is refused only in rare moments: wait a little, then answer 503
# DATABASE_BUSY rather than hold up the event loop.
_BUSY_TIMEOUT_MS = 250


class SqliteReads:
    """Synchronous reads of a SQLite file, on the caller's thread (see the module)."""

    def __init__(self, path: str, dialect: Dialect) -> None:
        self.path = path
        self.dialect = dialect
        self._prepared = PreparedStatements(dialect)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._opened: list[sqlite3.Connection] = []
        # Called with the SQL of each statement before it is sent (tests count them).
        self.listeners: list[Callable[[str], None]] = []

    async def first(self, statement: Executable, parameters: Parameters) -> ReadRow | None:
        rows = self._rows(self._connection(), self._prepared.of(statement), parameters, single=True)
        return rows[0] if rows else None

    async def all(self, statement: Executable, parameters: Parameters) -> Sequence[ReadRow]:
        return self._rows(self._connection(), self._prepared.of(statement), parameters)

    async def snapshot(self, *statements: tuple[Executable, Parameters]) -> list[Sequence[ReadRow]]:
        prepared = [(self._prepared.of(statement), values) for statement, values in statements]
        connection = self._connection()
        # A deferred transaction: its snapshot is taken at the first read and kept to the end.
        self._control(connection, "BEGIN")
        try:
            return [self._rows(connection, *one) for one in prepared]
        finally:
            self._control(connection, "COMMIT")

    async def drop_ended_connections(self) -> None:
        """SQLite: no server to end them."""

    async def dispose(self) -> None:
        with self._lock:
            opened, self._opened = self._opened, []
            # Threads that read again open a new connection.
            self._local = threading.local()
        for connection in opened:
            connection.close()

    def in_transaction(self) -> bool:
        """Whether this thread's connection has a transaction open (none between calls)."""
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        return connection is not None and connection.in_transaction

    def _rows(
        self,
        connection: sqlite3.Connection,
        prepared: Prepared,
        values: Parameters,
        *,
        single: bool = False,
    ) -> Sequence[ReadRow]:
        sql, parameters = prepared.positional(values)
        for listener in self.listeners:
            listener(sql)
        try:
            cursor = connection.execute(sql, parameters)
            description = cursor.description
            if description is None:
                return []
            make = prepared.rows or prepared.row_maker(
                [column[0] for column in description], [None] * len(description), self.dialect
            )
            if single:
                found = cursor.fetchone()
                return [] if found is None else [make(found)]
            return [make(row) for row in cursor.fetchall()]
        except sqlite3.Error as exc:
            raise self._translated(sql, parameters, exc) from exc

    def _control(self, connection: sqlite3.Connection, sql: str) -> None:
        try:
            connection.execute(sql)
        except sqlite3.Error as exc:
            raise self._translated(sql, [], exc) from exc

    def _translated(self, sql: str, parameters: list[Any], exc: sqlite3.Error) -> StatementError:
        """``exc`` as SQLAlchemy raises it (db/errors.py answers those)."""
        return DBAPIError.instance(
            sql, parameters, exc, sqlite3.Error, hide_parameters=True, dialect=self.dialect
        )

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = _open(self.path)
            self._local.connection = connection
            with self._lock:
                self._opened.append(connection)
        return connection


def _open(path: str) -> sqlite3.Connection:
    # Autocommit at the driver: each statement is its own snapshot unless BEGIN says otherwise.
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    connection.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
    connection.execute("PRAGMA query_only=ON")
    return connection


def sqlite_reads(url: str) -> SqliteReads:
    """The plain reads of the SQLite file of ``url`` (any SQLite driver's URL)."""
    database = make_url(url).database
    if not database or database == ":memory:":
        raise ValueError(f"{url!r} names no SQLite file")
    # The dialect compiles the statements and converts their values; its JSON documents are
    # the service's own, which orjson decodes several times faster. No connection is made.
    dialect = create_engine(sqlite_read_url(url), json_deserializer=orjson.loads).dialect
    return SqliteReads(database, dialect)
