"""Wake-up hints fire after the outermost commit only.

SQLAlchemy dispatches ``before_commit``/``after_commit`` for a released savepoint as well as
for the real commit: a hint fired then would wake the reconciler before the row it should
find is visible to other connections.
"""

from __future__ import annotations

import asyncio

import psycopg
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.db.engine import Database
from tenantplane.db.urls import libpq_dsn
from tenantplane.reconcile import wake_after_commit
from tenantplane.reconcile.hints import (
    NOTIFY_CHANNEL,
    notify_in_statement,
    wakeups,
)
from tests.statements import notifies, statements_sent

NAME = "test-hints"


async def settle() -> None:
    """Hints are delivered with ``call_soon_threadsafe``: let the loop run them."""
    for _ in range(3):
        await asyncio.sleep(0)


async def test_a_released_savepoint_wakes_nobody_before_the_outer_commit(
    database: Database,
) -> None:
    wake = wakeups.subscribe(NAME)
    try:
        async with database.sessionmaker() as session, session.begin():
            await session.execute(text("SELECT 1"))
            async with session.begin_nested():
                wake_after_commit(session, NAME)
            await settle()
            assert not wake.is_set()
        await settle()
        assert wake.is_set()
    finally:
        wakeups.unsubscribe(NAME, wake)


async def test_a_rolled_back_savepoint_keeps_the_hints_of_the_outer_transaction(
    database: Database,
) -> None:
    wake = wakeups.subscribe(NAME)
    try:
        async with database.sessionmaker() as session, session.begin():
            wake_after_commit(session, NAME)
            await session.execute(text("SELECT 1"))
            savepoint = await session.begin_nested()
            await savepoint.rollback()
        await settle()
        assert wake.is_set()
    finally:
        wakeups.unsubscribe(NAME, wake)


async def test_a_rolled_back_transaction_wakes_nobody(database: Database) -> None:
    wake = wakeups.subscribe(NAME)
    try:
        async with database.sessionmaker() as session:
            await session.begin()
            async with session.begin_nested():
                wake_after_commit(session, NAME)
            await session.rollback()
        await settle()
        assert not wake.is_set()
    finally:
        wakeups.unsubscribe(NAME, wake)


async def test_other_processes_are_notified_once_at_the_outer_commit(database: Database) -> None:
    with statements_sent(database.engine) as statements:
        async with database.sessionmaker() as session, session.begin():
            await session.execute(text("SELECT 1"))
            async with session.begin_nested():
                wake_after_commit(session, NAME)
            wake_after_commit(session, NAME)
    notified = notifies(statements)
    expected = 1 if database.engine.dialect.name == "postgresql" else 0
    assert len(notified) == expected, (NOTIFY_CHANNEL, notified)


async def test_a_notify_carried_by_a_statement_is_not_sent_again_at_commit(
    database: Database,
) -> None:
    """``notify_in_statement`` outside a savepoint: its statement carries the NOTIFY and the
    commit sends none of its own; inside one (which a rollback would undo), the commit does."""
    postgresql = database.engine.dialect.name == "postgresql"
    with statements_sent(database.engine) as statements:
        async with database.sessionmaker() as session, session.begin():
            carried = notify_in_statement(session, NAME)
            assert (carried is not None) == postgresql
            if carried is not None:
                await session.execute(select(carried))
        carried_count = len(notifies(statements))
        async with database.sessionmaker() as session, session.begin():
            await session.execute(text("SELECT 1"))
            async with session.begin_nested():
                assert notify_in_statement(session, NAME) is None
    notified = notifies(statements)
    assert carried_count == (1 if postgresql else 0), notified
    assert len(notified) == (2 if postgresql else 0), notified


async def _listen(database: Database) -> psycopg.AsyncConnection[object]:
    dsn = libpq_dsn(database.engine.url.render_as_string(hide_password=False))
    connection = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    await connection.execute(f"LISTEN {NOTIFY_CHANNEL}")
    return connection


async def _received(connection: psycopg.AsyncConnection[object]) -> list[str]:
    # Each delivered notification: a NOTIFY is delivered at commit, or never.
    await connection.execute("SELECT 1")  # reads what the server sent meanwhile
    return [notify.payload async for notify in connection.notifies(timeout=0.2)]


async def _carry(session: AsyncSession) -> None:
    """A statement the writer runs anyway, carrying the hint's NOTIFY (PostgreSQL)."""
    carried = notify_in_statement(session, NAME)
    if carried is not None:
        await session.execute(select(carried))


async def test_a_carried_hint_is_sent_once_and_delivered_at_commit_only(
    database: Database,
) -> None:
    if database.is_sqlite:
        await _carried_hint_wakes_this_process_at_commit_only(database)
        return
    listener = await _listen(database)
    try:
        with statements_sent(database.engine) as statements:
            async with database.sessionmaker() as session, session.begin():
                await _carry(session)
                assert len(notifies(statements)) == 1
                assert await _received(listener) == []  # not before the commit
        assert len(notifies(statements)) == 1  # not sent again by the commit
        assert await _received(listener) == [NAME]
        async with database.sessionmaker() as session:
            await session.begin()
            await _carry(session)
            await session.rollback()
        assert await _received(listener) == []
    finally:
        await listener.close()


async def test_a_hint_carried_before_a_rolled_back_savepoint_is_sent_again_at_commit(
    database: Database,
) -> None:
    if database.is_sqlite:
        await _carried_hint_wakes_this_process_at_commit_only(database, savepoint=True)
        return
    listener = await _listen(database)
    try:
        async with database.sessionmaker() as session, session.begin():
            await _carry(session)
            savepoint = await session.begin_nested()
            await session.execute(text("SELECT 1"))
            await savepoint.rollback()  # forgets what was carried: the commit sends it again
        assert await _received(listener) == [NAME]  # one delivery (PostgreSQL folds repeats)
    finally:
        await listener.close()


async def _carried_hint_wakes_this_process_at_commit_only(
    database: Database, *, savepoint: bool = False
) -> None:
    """SQLite has no NOTIFY (nothing is carried): the hint wakes this process's runners at
    commit, even with a savepoint rolled back after it."""
    wake = wakeups.subscribe(NAME)
    try:
        async with database.sessionmaker() as session, session.begin():
            await _carry(session)
            if savepoint:
                nested = await session.begin_nested()
                await nested.rollback()
            assert not wake.is_set()
        assert wake.is_set()
    finally:
        wakeups.unsubscribe(NAME, wake)
