"""The database's clock (db/clock.py): read once, then the monotonic time since; read again
on every new pooled connection and in the background once it is old; never the process's
wall clock on PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from tenantplane.db import clock as clock_module
from tenantplane.db.clock import ClockUnanchored, DatabaseClock, clock_of
from tenantplane.db.engine import Database
from tenantplane.db.errors import DatabaseTrouble, classify
from tenantplane.db.migrate import upgrade
from tests.backends import postgres_database
from tests.factories import Factory
from tests.faketime import SLACK, database_clock_now

# The clock's own error on loopback: half a round trip, and the monotonic clock's drift.
CLOSE = timedelta(milliseconds=250)


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """For what PostgreSQL alone has: SQLite's clock is the machine's, nothing to anchor."""
    with postgres_database() as url:
        upgrade(url)
        yield url


def _the_wall_clock_is_off(monkeypatch: pytest.MonkeyPatch, offset: timedelta) -> None:
    """The process's wall clock, as this module reads it, runs ``offset`` off."""

    def skewed() -> datetime:
        return datetime.now(UTC) + offset

    monkeypatch.setattr(clock_module, "utcnow", skewed)


async def test_the_clock_reads_the_databases_time_not_the_processs(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    if database.is_sqlite:
        # One machine's file: its clock is the database's, whatever it reads.
        _the_wall_clock_is_off(monkeypatch, timedelta(minutes=10))
        assert await database.clock.now() - datetime.now(UTC) > timedelta(minutes=9)
        return
    _the_wall_clock_is_off(monkeypatch, timedelta(minutes=10))
    await database.clock.anchor()
    reference = await database_clock_now(database)
    assert abs(await database.clock.now() - reference) < CLOSE


async def test_a_sessions_clock_is_its_databases(database: Database) -> None:
    async with database.transaction() as session:
        assert clock_of(session) is database.clock


async def test_a_new_connection_anchors_the_clock(postgres_url: str) -> None:
    database = Database.connect(postgres_url)
    try:
        with pytest.raises(ClockUnanchored) as refused:
            database.clock.anchored_now()
        # Answered as a database that cannot be reached yet: 503, retried.
        assert classify(refused.value) is DatabaseTrouble.unavailable
        async with database.transaction() as session:
            await session.execute(text("SELECT 1"))
        assert database.clock.anchored
        assert abs(await database.clock.now() - await database_clock_now(database)) < CLOSE
    finally:
        await database.dispose()


async def test_an_unanchored_clock_reads_itself_in_the_background(postgres_url: str) -> None:
    database = Database.connect(postgres_url)
    try:
        with pytest.raises(ClockUnanchored):
            database.clock.anchored_now()
        loop = asyncio.get_running_loop()
        give_up = loop.time() + 10
        while not database.clock.anchored:
            assert loop.time() < give_up, "the clock was never read"
            await asyncio.sleep(0.01)
        assert abs(await database.clock.now() - await database_clock_now(database)) < CLOSE
    finally:
        await database.dispose()


async def test_the_first_time_asked_is_read_from_the_database(postgres_url: str) -> None:
    database = Database.connect(postgres_url)
    try:
        assert not database.clock.anchored
        now = await database.clock.now()
        assert abs(now - await database_clock_now(database)) < CLOSE
    finally:
        await database.dispose()


async def test_an_old_anchor_is_read_again_in_the_background(postgres_url: str) -> None:
    database = Database.connect(postgres_url)
    try:
        await _an_old_anchor_is_read_again(database)
    finally:
        await database.dispose()


async def _an_old_anchor_is_read_again(database: Database) -> None:
    await database.clock.anchor()
    old = database.clock._anchor
    assert old is not None
    # As if the anchor had been read long ago, and then ten seconds off (a drift).
    stale = old.monotonic - clock_module.REANCHOR_SECONDS - 1
    database.clock._anchor = type(old)(old.at - timedelta(seconds=10), stale, old.uncertainty)
    assert abs(database.clock.anchored_now() - await database_clock_now(database)) > timedelta(
        seconds=9
    )
    loop = asyncio.get_running_loop()
    give_up = loop.time() + 10
    while database.clock._anchor.monotonic == stale:
        assert loop.time() < give_up, "the old anchor was never replaced"
        await asyncio.sleep(0.01)
    assert abs(await database.clock.now() - await database_clock_now(database)) < CLOSE


async def test_column_defaults_stamp_the_databases_time(
    database: Database, factory: Factory
) -> None:
    before = await database_clock_now(database)
    tenant = await factory.tenant()
    after = await database_clock_now(database)
    async with database.sessionmaker() as session:
        created = (
            await session.execute(
                text("SELECT created_at FROM tenants WHERE id = :id"), {"id": tenant.id}
            )
        ).scalar_one()
    if isinstance(created, str):  # SQLite: as stored
        created = datetime.fromisoformat(created).replace(tzinfo=UTC)
    assert before - SLACK <= created <= after + SLACK


def test_a_clock_of_sqlite_needs_no_anchor() -> None:
    database = Database.connect("sqlite+aiosqlite://")
    clock: DatabaseClock = database.clock
    assert clock.anchored
    assert abs(clock.anchored_now() - datetime.now(UTC)) < CLOSE
