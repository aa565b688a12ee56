"""A frozen session must not stall the API: writes behind a held lock fail fast with a
retryable 503, the server ends a session left idle in a transaction, and a process that
cannot get a connection answers 503 instead of hanging."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from tenantplane.db.engine import Database, DatabaseOptions
from tenantplane.db.migrate import upgrade
from tenantplane.db.postgres_reads import PostgresReads
from tenantplane.db.urls import libpq_dsn
from tests.backends import postgres_database
from tests.conftest import TEST_SECRET, make_settings
from tests.factories import Factory, TenantFixture
from tests.http_client import api_client, bearer, running_app

DEADLINE_SECONDS = 30.0
SYNC = [{"cluster": "prod", "namespace": "default"}]


@dataclass
class Deployment:
    url: str
    app: FastAPI
    client: httpx.AsyncClient
    factory: Factory


@pytest.fixture
async def postgres(tmp_path: Path) -> AsyncIterator[Deployment]:
    """An API on a PostgreSQL database of its own, with a lock timeout short for a test."""
    with postgres_database("tenantplane_timeouts") as url:
        await asyncio.to_thread(upgrade, url)
        database = Database.connect(url)
        settings = make_settings(url, tmp_path, run_reconcilers=False, db_lock_timeout_seconds=0.2)
        try:
            async with running_app(settings) as app, api_client(app) as client:
                yield Deployment(url, app, client, Factory(database, TEST_SECRET.encode()))
        finally:
            await database.dispose()


def _dsn(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


async def _secret(deployment: Deployment) -> tuple[TenantFixture, str, dict[str, Any]]:
    tenant = await deployment.factory.tenant()
    await deployment.factory.cluster_row(tenant.id, "prod")
    response = await deployment.client.post(
        f"{tenant.path}/secrets",
        json={"name": "db-creds", "secretPath": "apps/db", "sync": []},
        headers=bearer(tenant.admin_key),
    )
    assert response.status_code == 201, response.text
    return tenant, f"{tenant.path}/secrets/db-creds", response.json()


async def test_a_write_behind_a_held_row_lock_answers_503_and_changes_nothing(
    postgres: Deployment,
) -> None:
    tenant, path, created = await _secret(postgres)
    # Another session (a frozen worker) holds the secret's row lock, idle in its transaction.
    async with await psycopg.AsyncConnection.connect(_dsn(postgres.url)) as frozen:
        await frozen.execute("SELECT id FROM secrets WHERE name = 'db-creds' FOR UPDATE")
        response = await postgres.client.patch(
            path, json={"sync": SYNC}, headers=bearer(tenant.admin_key)
        )
        assert response.status_code == 503, response.text
        assert response.json()["code"] == "DATABASE_BUSY"
        assert int(response.headers["Retry-After"]) >= 1
        await frozen.rollback()
    unchanged = await postgres.client.get(path, headers=bearer(tenant.admin_key))
    assert unchanged.json()["sync"] == []
    assert unchanged.json()["resourceVersion"] == created["resourceVersion"]
    # The lock gone, the same write goes through.
    retried = await postgres.client.patch(
        path, json={"sync": SYNC}, headers=bearer(tenant.admin_key)
    )
    assert retried.status_code == 200, retried.text


async def test_a_session_idle_in_a_transaction_is_ended_and_its_locks_released(
    postgres: Deployment,
) -> None:
    tenant, path, _ = await _secret(postgres)
    # A process of ours, frozen while it holds a row lock in an open transaction.
    frozen = Database.connect(
        postgres.url, DatabaseOptions(idle_in_transaction_timeout_seconds=0.5)
    )
    try:
        async with frozen.sessionmaker() as session:
            await session.execute(text("SELECT id FROM secrets WHERE name = 'db-creds' FOR UPDATE"))
            pid = (await session.execute(text("SELECT pg_backend_pid()"))).scalar()
            await _until_gone(postgres.url, pid)
            with pytest.raises(Exception, match="idle-in-transaction"):
                await session.execute(text("SELECT 1"))
    finally:
        await frozen.dispose()
    response = await postgres.client.patch(
        path, json={"sync": SYNC}, headers=bearer(tenant.admin_key)
    )
    assert response.status_code == 200, response.text


async def _until_gone(url: str, pid: Any) -> None:
    """Poll until the server has ended backend ``pid`` (with a deadline)."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + DEADLINE_SECONDS
    async with await psycopg.AsyncConnection.connect(_dsn(url), autocommit=True) as watcher:
        while True:
            cursor = await watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)
            )
            row = await cursor.fetchone()
            if row is not None and row[0] == 0:
                return
            assert loop.time() < give_up, "the idle transaction was never ended"
            await asyncio.sleep(0.05)


async def test_no_free_connection_answers_503_instead_of_hanging(
    database: Database, database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    settings = make_settings(
        database_url,
        tmp_path,
        run_reconcilers=False,
        db_pool_size=1,
        db_max_overflow=0,
        db_pool_timeout_seconds=0.2,
    )
    async with running_app(settings) as app, api_client(app) as client:
        engine = app.state.database.engine
        async with engine.connect() as held:  # the process's only connection, in use
            await held.execute(text("SELECT 1"))
            response = await client.get(f"{tenant.path}/secrets", headers=bearer(tenant.admin_key))
            assert response.status_code == 503, response.text
            assert response.json()["code"] == "DATABASE_UNAVAILABLE"
            assert int(response.headers["Retry-After"]) >= 1
        # Free again: the next request is served.
        response = await client.get(f"{tenant.path}/secrets", headers=bearer(tenant.admin_key))
        assert response.status_code == 200, response.text


@pytest.mark.parametrize("read", ["session", "plain"])
async def test_connections_ended_by_the_server_are_replaced(tmp_path: Path, read: str) -> None:
    """A PostgreSQL restart ends every pooled connection. Without a ping on each checkout,
    the first request to use a dead connection fails (503, retryable); every pool of the
    process then drops its dead connections, so the requests after it are served. A
    session request uses two pools (its API key looked up by a plain read, here on every
    request: no key cache), a polled cluster GET the plain reads' alone; an API key's last
    use is written through the third."""
    with postgres_database("tenantplane_timeouts") as url:
        await asyncio.to_thread(upgrade, url)
        database = Database.connect(url)
        settings = make_settings(url, tmp_path, run_reconcilers=False, api_key_cache_seconds=0)
        try:
            factory = Factory(database, TEST_SECRET.encode())
            async with running_app(settings) as app, api_client(app) as client:
                await _restart_between_requests(url, factory, client, read)
        finally:
            await database.dispose()


async def _restart_between_requests(
    url: str, factory: Factory, client: httpx.AsyncClient, read: str
) -> None:
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    path = f"{tenant.path}/secrets" if read == "session" else f"{tenant.path}/clusters/prod"
    headers = bearer(tenant.admin_key)
    warm = await asyncio.gather(*(client.get(path, headers=headers) for _ in range(8)))
    assert [response.status_code for response in warm] == [200] * 8
    async with await psycopg.AsyncConnection.connect(_dsn(url), autocommit=True) as admin:
        ended = await admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        row = await ended.fetchone()
        assert row is not None
        assert row[0] >= 1
    first = await client.get(path, headers=headers)
    assert first.status_code == 503, first.text
    assert first.json()["code"] == "DATABASE_UNAVAILABLE"
    after = [(await client.get(path, headers=headers)).status_code for _ in range(8)]
    assert after == [200] * 8


async def test_a_poll_behind_an_exclusive_lock_answers_503_busy(postgres: Deployment) -> None:
    """Plain reads take no row locks, but a table locked exclusively (a migration) holds
    them up: past the lock timeout the poll answers 503 DATABASE_BUSY, then is served."""
    tenant = await postgres.factory.tenant()
    await postgres.factory.cluster_row(tenant.id, "prod")
    path, headers = f"{tenant.path}/clusters/prod", bearer(tenant.readonly_key)
    async with await psycopg.AsyncConnection.connect(_dsn(postgres.url)) as migration:
        await migration.execute("LOCK TABLE clusters IN ACCESS EXCLUSIVE MODE")
        response = await postgres.client.get(path, headers=headers)
        assert response.status_code == 503, response.text
        assert response.json()["code"] == "DATABASE_BUSY"
        assert int(response.headers["Retry-After"]) >= 1
        await migration.rollback()
    assert (await postgres.client.get(path, headers=headers)).status_code == 200


async def test_a_poll_with_no_free_read_connection_answers_503(tmp_path: Path) -> None:
    """The plain reads' own pool, exhausted (its one connection waits behind a lock), makes
    the next poll answer 503 DATABASE_UNAVAILABLE within the pool timeout, not hang."""
    with postgres_database("tenantplane_timeouts") as url:
        await asyncio.to_thread(upgrade, url)
        database = Database.connect(url)
        settings = make_settings(
            url,
            tmp_path,
            run_reconcilers=False,
            db_read_pool_size=1,
            db_pool_timeout_seconds=0.3,
            db_lock_timeout_seconds=DEADLINE_SECONDS,
        )
        try:
            factory = Factory(database, TEST_SECRET.encode())
            tenant = await factory.tenant()
            await factory.cluster_row(tenant.id, "prod")
            path, headers = f"{tenant.path}/clusters/prod", bearer(tenant.readonly_key)
            async with running_app(settings) as app, api_client(app) as client:
                assert (await client.get(path, headers=headers)).status_code == 200
                async with await psycopg.AsyncConnection.connect(_dsn(url)) as migration:
                    await migration.execute("LOCK TABLE clusters IN ACCESS EXCLUSIVE MODE")
                    waiting = asyncio.create_task(client.get(path, headers=headers))
                    await _until_waiting_for_lock(url)
                    response = await client.get(path, headers=headers)
                    assert response.status_code == 503, response.text
                    assert response.json()["code"] == "DATABASE_UNAVAILABLE"
                    await migration.rollback()
                assert (await waiting).status_code == 200
                assert (await client.get(path, headers=headers)).status_code == 200
        finally:
            await database.dispose()


async def _until_waiting_for_lock(url: str) -> None:
    """Poll until some session of the database waits for a lock (with a deadline)."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + DEADLINE_SECONDS
    async with await psycopg.AsyncConnection.connect(_dsn(url), autocommit=True) as watcher:
        while True:
            cursor = await watcher.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            row = await cursor.fetchone()
            if row is not None and row[0] > 0:
                return
            assert loop.time() < give_up, "no session ever waited for the lock"
            await asyncio.sleep(0.05)


async def test_a_read_connection_serves_on_after_a_failed_statement_and_a_lost_server() -> None:
    """The plain reads run each connection's statements on one cursor: a statement that
    failed, or a connection the server ended and the pool replaced, leaves the next read
    answered."""
    count = text("SELECT count(*) FROM pg_class WHERE relname = 'tenants'")
    backend = text("SELECT pg_backend_pid()")
    with postgres_database("tenantplane_timeouts") as url:
        database = Database.connect(url)
        reads = PostgresReads(
            libpq_dsn(url),
            database.engine.dialect,
            size=1,
            timeout_seconds=5,
            connect_timeout_seconds=5,
            session_options="",
        )
        try:
            assert tuple(await reads.first(count, {}) or ()) == (0,)
            with pytest.raises(DBAPIError, match="division by zero"):
                await reads.first(text("SELECT 1 / 0"), {})
            assert tuple(await reads.first(count, {}) or ()) == (0,)
            row = await reads.first(backend, {})
            assert row is not None
            own = row[0]
            async with await psycopg.AsyncConnection.connect(_dsn(url), autocommit=True) as admin:
                await admin.execute("SELECT pg_terminate_backend(%s)", (own,))
            with pytest.raises(DBAPIError):
                await reads.first(count, {})
            await reads.drop_ended_connections()
            assert tuple(await reads.first(count, {}) or ()) == (0,)
            assert tuple(await reads.first(backend, {}) or ()) != (own,)
        finally:
            await reads.dispose()
            await database.dispose()
