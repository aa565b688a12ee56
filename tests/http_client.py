"""Real HTTP through the ASGI app (lifespan included)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx
from fastapi import FastAPI
from sqlalchemy import event

from tenantplane.app import create_app
from tenantplane.config import Settings
from tenantplane.db.engine import Database
from tenantplane.db.migrate import upgrade
from tenantplane.db.postgres_reads import PostgresReads
from tenantplane.db.sqlite_reads import SqliteReads

BASE_URL = "http://tenantplane.test"


@asynccontextmanager
async def running_app(settings: Settings, **options: str) -> AsyncIterator[FastAPI]:
    app = create_app(settings, **options)
    async with app.router.lifespan_context(app):
        yield app


@asynccontextmanager
async def api_client(
    app: FastAPI, *, ip: str = "203.0.113.10", headers: dict[str, str] | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False, client=(ip, 40000))
    async with httpx.AsyncClient(
        transport=transport, base_url=f"{BASE_URL}/api/v1", headers=headers
    ) as client:
        yield client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@contextmanager
def plain_reads_of(app: FastAPI, table: str) -> Iterator[list[str]]:
    """The statements the app's plain reads (db/reads.py) send about ``table`` while the
    block runs."""
    seen: list[str] = []

    def record(statement: str) -> None:
        if f"FROM {table}" in statement:
            seen.append(statement)

    reads = app.state.database.reads
    if isinstance(reads, PostgresReads | SqliteReads):
        reads.listeners.append(record)
        try:
            yield seen
        finally:
            reads.listeners.remove(record)
        return

    def record_cursor(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        record(statement)

    engine = getattr(reads.engine, "sync_engine", reads.engine)
    event.listen(engine, "before_cursor_execute", record_cursor)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record_cursor)


@asynccontextmanager
async def api_on_a_postgres_of_its_own(
    prefix: str, tmp_path: Path
) -> AsyncIterator[tuple[str, Database, httpx.AsyncClient]]:
    """A migrated PostgreSQL database of its own (its URL), a ``Database`` on it and a
    client of an app serving it without reconcilers: for the tests that race transactions
    on PostgreSQL, which SQLite's one writer at a time rules out."""
    from tests.backends import postgres_database
    from tests.conftest import make_settings

    with postgres_database(prefix) as url:
        await asyncio.to_thread(upgrade, url)
        database = Database.connect(url)
        settings = make_settings(url, tmp_path, run_reconcilers=False)
        try:
            async with running_app(settings) as app, api_client(app) as client:
                yield url, database, client
        finally:
            await database.dispose()
