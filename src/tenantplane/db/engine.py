"""Engine and session factory for SQLite (embedded default) and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from tenantplane.db.urls import normalise_database_url


def _sqlite_connect_hooks(engine: AsyncEngine) -> None:
    sync_engine = engine.sync_engine

    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _: Any) -> None:
        # Let SQLAlchemy, not the driver, decide when transactions begin (see _on_begin).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(sync_engine, "begin")
    def _on_begin(connection: Any) -> None:
        # A deferred transaction that later writes can fail at once with SQLITE_BUSY when
        # another writer got there first; taking the write lock up front makes writers queue.
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def make_engine(url: str) -> AsyncEngine:
    url = normalise_database_url(url)
    parsed = make_url(url)
    options: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        options["connect_args"] = {"timeout": 30}
    else:
        options.update(pool_size=10, max_overflow=20, pool_pre_ping=True)
    engine = create_async_engine(url, **options)
    if parsed.get_backend_name() == "sqlite":
        _sqlite_connect_hooks(engine)
    return engine


@dataclass
class Database:
    engine: AsyncEngine
    sessionmaker: async_sessionmaker[AsyncSession]

    @classmethod
    def connect(cls, url: str) -> Database:
        engine = make_engine(url)
        return cls(engine, async_sessionmaker(engine, expire_on_commit=False))

    @property
    def is_sqlite(self) -> bool:
        return self.engine.dialect.name == "sqlite"

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """A session committed on success and rolled back on any error (workers, CLI)."""
        async with self.sessionmaker() as session, session.begin():
            yield session

    async def dispose(self) -> None:
        await self.engine.dispose()
