"""Engine and session factory for SQLite (embedded default) and PostgreSQL.

Connections are a budget (docs/operations.md): each process's pool holds at most
``pool_size + max_overflow`` of them, and a request that cannot get one within
``pool_timeout`` fails (503 ``DATABASE_UNAVAILABLE``) instead of queueing without end.
PostgreSQL sessions carry ``lock_timeout``, ``statement_timeout`` and
``idle_in_transaction_session_timeout``, so no session waits behind, or holds, a lock for
long: a frozen process's transaction is ended by the server, and a write queued behind a
lock fails fast (503 ``DATABASE_BUSY``) rather than being committed after its client left.
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.pool import AsyncAdaptedQueuePool

from tenantplane.db import write_gate
from tenantplane.db.clock import CLOCK, DatabaseClock
from tenantplane.db.lost_connections import ServerLoss
from tenantplane.db.postgres_reads import PostgresReads
from tenantplane.db.reads import EngineReads, Reads
from tenantplane.db.sqlite_reads import sqlite_reads
from tenantplane.db.urls import libpq_dsn, normalise_database_url
from tenantplane.files import create_private

if TYPE_CHECKING:
    from tenantplane.config import Settings


# Execution option of the engine behind read-only sessions (Database.reader).
READ_ONLY = "tenantplane_read_only"
# Execution option of transactions that go first at SQLite's write gate (db/write_gate.py).
WRITES_FIRST = "tenantplane_writes_first"


@dataclass(frozen=True)
class DatabaseOptions:
    """The connection budget and session timeouts (TENANTPLANE_DB_* settings); 0 = off."""

    pool_size: int = 8
    max_overflow: int = 4
    # PostgreSQL's pool of autocommit connections for plain reads (db/reads.py).
    read_pool_size: int = 4
    # The in-process reconcilers' own pool (Database.for_reconcilers).
    reconcile_pool_size: int = 4
    pool_timeout_seconds: float = 5.0
    lock_timeout_seconds: float = 5.0
    statement_timeout_seconds: float = 30.0
    idle_in_transaction_timeout_seconds: float = 30.0
    # Keep the overflow connections open too once opened (a worker): the budget is the same,
    # but a demand that comes in bursts does not close and reopen them (see make_engine).
    keep_overflow_open: bool = False

    @classmethod
    def from_settings(cls, settings: Settings) -> DatabaseOptions:
        return cls(
            pool_size=settings.db_pool_size,
            max_overflow=settings.db_max_overflow,
            read_pool_size=settings.db_read_pool_size,
            reconcile_pool_size=settings.db_reconcile_pool_size,
            pool_timeout_seconds=settings.db_pool_timeout_seconds,
            lock_timeout_seconds=settings.db_lock_timeout_seconds,
            statement_timeout_seconds=settings.db_statement_timeout_seconds,
            idle_in_transaction_timeout_seconds=settings.db_idle_in_transaction_timeout_seconds,
        )

    @property
    def connect_timeout_seconds(self) -> int:
        """libpq's: an unreachable server fails within the pool timeout too (at least 2 s)."""
        return max(2, math.ceil(self.pool_timeout_seconds))

    def postgres_session_options(self) -> str:
        """libpq ``options``: the timeouts, set on every pooled connection as it opens."""
        timeouts = {
            "lock_timeout": self.lock_timeout_seconds,
            "statement_timeout": self.statement_timeout_seconds,
            "idle_in_transaction_session_timeout": self.idle_in_transaction_timeout_seconds,
        }
        return " ".join(
            f"-c {name}={math.ceil(seconds * 1000)}ms" for name, seconds in timeouts.items()
        )


def _sqlite_connect_hooks(engine: AsyncEngine) -> None:
    sync_engine = engine.sync_engine
    database = str(engine.url.database)

    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _: Any) -> None:
        # Let SQLAlchemy, not the driver, decide when transactions begin (see _on_begin).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(sync_engine, "begin")
    def _on_begin(connection: Any) -> None:
        # A deferred transaction that later writes can fail at once with SQLITE_BUSY when
        # another writer got there first; taking the write lock up front makes writers queue.
        # Reads (READ_ONLY) take no lock: in WAL mode they see a snapshot and wait for nobody.
        if connection.get_execution_options().get(READ_ONLY):
            connection.exec_driver_sql("BEGIN")
            return
        first = bool(connection.get_execution_options().get(WRITES_FIRST))
        write_gate.enter(connection.connection.info, database, first=first)
        try:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        except BaseException:
            write_gate.leave(connection.connection.info)
            raise

    @event.listens_for(sync_engine.pool, "checkin")
    def _on_checkin(dbapi_connection: Any, record: Any) -> None:
        write_gate.leave(record.info)


def _switch_to_wal(database: Path, patience_seconds: float = 30.0) -> None:
    """Put the file in WAL mode once, before any pooled connection opens.

    The mode is stored in the file, so this is needed once per database. SQLite answers a
    switch that races another connection with "database is locked" at once, without waiting
    on its busy timeout, so processes starting together on a new file take turns here.
    """
    deadline = time.monotonic() + patience_seconds
    while True:
        try:
            mode = _read_or_set_wal(database, patience_seconds)
            break
        except sqlite3.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    if mode != "wal":
        raise RuntimeError(f"SQLite kept {database} in {mode!r} journal mode, not WAL")


def _read_or_set_wal(database: Path, timeout_seconds: float) -> str:
    connection = sqlite3.connect(database, timeout=timeout_seconds)
    try:
        mode = str(connection.execute("PRAGMA journal_mode").fetchone()[0])
        if mode != "wal":
            mode = str(connection.execute("PRAGMA journal_mode=WAL").fetchone()[0])
        return mode
    finally:
        connection.close()


def make_engine(url: str, settings: DatabaseOptions | None = None) -> AsyncEngine:
    """The engine of ``url``: the pool of sessions and transactions."""
    settings = settings or DatabaseOptions()
    url = normalise_database_url(url)
    parsed = make_url(url)
    pooled: dict[str, Any] = {
        "pool_size": settings.pool_size,
        "max_overflow": settings.max_overflow,
        "pool_timeout": settings.pool_timeout_seconds,
    }
    if settings.keep_overflow_open:
        # A pool closes an overflow connection as soon as it is returned while its kept ones
        # are idle. A worker's steps take a connection to load, give it back during the
        # outside call and take one again to apply: with more rows in flight than kept
        # connections it opened and closed one every few steps (a new server process each).
        pooled.update(pool_size=settings.pool_size + settings.max_overflow, max_overflow=0)
    options: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:":
            # Owner-only from the start; SQLite gives its -wal and -shm files the same mode.
            create_private(Path(database))
            _switch_to_wal(Path(database))
            # Named, not left to the dialect: SQLAlchemy before 2.0.38 gave file databases a
            # NullPool, which opens a connection (and a thread) per checkout.
            options.update(pooled, poolclass=AsyncAdaptedQueuePool)
        options["connect_args"] = {"timeout": 30}
    else:
        options.update(
            pooled,
            # No ping on each checkout (a round trip per request): a connection the server
            # ended (a restart) fails its first statement instead, SQLAlchemy recognises the
            # disconnect and replaces the whole pool, and that one request answers 503.
            pool_pre_ping=False,
            connect_args={
                "options": settings.postgres_session_options(),
                # An unreachable server fails within the pool timeout too (libpq: >= 2 s).
                "connect_timeout": settings.connect_timeout_seconds,
            },
        )
    # Errors name their statement, never the values bound to it (credentials among them):
    # their message is logged with the traceback of an unhandled error.
    engine = create_async_engine(url, hide_parameters=True, **options)
    if parsed.get_backend_name() == "sqlite":
        _sqlite_connect_hooks(engine)
    return engine


@dataclass
class Database:
    engine: AsyncEngine
    sessionmaker: async_sessionmaker[AsyncSession]
    # Sessions that only read (safe methods): on SQLite they do not take the write lock, so
    # reads neither queue behind writers nor make them queue. Same pool as ``sessionmaker``.
    reader: async_sessionmaker[AsyncSession]
    # Plain reads that answer GETs without a session (db/reads.py).
    reads: Reads
    # PostgreSQL: sessions in autocommit, for ``statements`` (same pool as ``sessionmaker``).
    autocommit: async_sessionmaker[AsyncSession]
    # The database's clock (db/clock.py); every session of this Database carries it.
    clock: DatabaseClock
    options: DatabaseOptions = field(default_factory=DatabaseOptions)
    # False for a Database that shares another's plain reads (for_reconcilers).
    owns_reads: bool = True
    # Sessions whose transactions go first at SQLite's write gate (``transaction(first=)``).
    _first: async_sessionmaker[AsyncSession] = field(init=False, repr=False)
    # PostgreSQL: when the server last ended this process's connections (a restart).
    _server_loss: ServerLoss | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        first = self.engine.execution_options(**{WRITES_FIRST: True})
        self._first = async_sessionmaker(first, expire_on_commit=False, info={CLOCK: self.clock})
        self._server_loss = None if self.is_sqlite else ServerLoss(self.engine)

    @classmethod
    def connect(cls, url: str, options: DatabaseOptions | None = None) -> Database:
        options = options or DatabaseOptions()
        engine = make_engine(url, options)
        return cls._of(engine, _plain_reads(engine, options), options)

    @classmethod
    def _of(
        cls, engine: AsyncEngine, reads: Reads, options: DatabaseOptions, *, owns_reads: bool = True
    ) -> Database:
        reading = engine.execution_options(**{READ_ONLY: True})
        # The isolation level is set on the connection at checkout and reset on return:
        # psycopg only flips a flag, no round trip.
        autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        clock = DatabaseClock(engine)
        info = {CLOCK: clock}
        return cls(
            engine,
            async_sessionmaker(engine, expire_on_commit=False, info=info),
            async_sessionmaker(reading, expire_on_commit=False, info=info),
            reads,
            async_sessionmaker(autocommit, expire_on_commit=False, info=info),
            clock,
            options,
            owns_reads,
        )

    def for_reconcilers(self) -> Database:
        """The same database through a pool of its own (``reconcile_pool_size``, no overflow)
        for reconcilers running beside the API: requests queued on the API's pool (a burst)
        would otherwise hold back every reconciler step, each of which waits its turn for a
        connection behind them. An in-memory SQLite database exists in its one connection:
        shared as it is."""
        if self.is_sqlite and self.engine.url.database in (None, "", ":memory:"):
            return self
        options = replace(self.options, pool_size=self.options.reconcile_pool_size, max_overflow=0)
        url = self.engine.url.render_as_string(hide_password=False)
        return Database._of(make_engine(url, options), self.reads, options, owns_reads=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> Database:
        return cls.connect(settings.database_url, DatabaseOptions.from_settings(settings))

    @property
    def is_sqlite(self) -> bool:
        return self.engine.dialect.name == "sqlite"

    @asynccontextmanager
    async def transaction(self, *, first: bool = False) -> AsyncIterator[AsyncSession]:
        """A session committed on success and rolled back on any error (workers, CLI).
        ``first``: on SQLite it goes before other writers of this process at the write gate
        (db/write_gate.py; elsewhere it changes nothing)."""
        sessions = self._first if first else self.sessionmaker
        async with sessions() as session, session.begin():
            yield session

    @asynccontextmanager
    async def statements(self) -> AsyncIterator[AsyncSession]:
        """A session in which each statement stands alone (workers' single-statement steps).

        PostgreSQL: autocommit, so a statement is one round trip instead of three with the
        BEGIN and COMMIT around it; nothing spans two statements (no lock, no atomicity).
        SQLite: an ordinary transaction (its cost is not round trips).
        """
        if self.is_sqlite:
            async with self.transaction() as session:
                yield session
            return
        async with self.autocommit() as session:
            yield session

    async def connections_lost(self) -> None:
        """A statement failed on a connection the server had ended (a restart, a failover):
        it ended the others too. Every pool of this Database drops its dead connections
        now, so one request learns of it rather than one per pool (db/lost_connections.py)."""
        if self._server_loss is None or not self._server_loss.noticed():
            return
        await self.reads.drop_ended_connections()

    async def dispose(self) -> None:
        if self.owns_reads:
            await self.reads.dispose()
        await self.engine.dispose()


def _plain_reads(engine: AsyncEngine, options: DatabaseOptions) -> Reads:
    if engine.dialect.name != "sqlite":
        return PostgresReads(
            libpq_dsn(engine.url.render_as_string(hide_password=False)),
            engine.dialect,
            size=options.read_pool_size,
            timeout_seconds=options.pool_timeout_seconds,
            connect_timeout_seconds=options.connect_timeout_seconds,
            session_options=options.postgres_session_options(),
        )
    if engine.url.database in (None, "", ":memory:"):
        # An in-memory database exists in its one connection: read through the same engine,
        # without the write lock.
        return EngineReads(engine.execution_options(**{READ_ONLY: True}))
    return sqlite_reads(engine.url.render_as_string(False))
