"""Wake-up hints fire after the outermost commit only.

SQLAlchemy dispatches ``before_commit``/``after_commit`` for a released savepoint as well as
for the real commit: a hint fired then would wake the reconciler before the row it should
find is visible to other connections.
"""

from __future__ import annotations

import asyncio

from sqlalchemy import event, select, text

from tenantplane.db.engine import Database
from tenantplane.reconcile import wake_after_commit
from tenantplane.reconcile.hints import NOTIFY_CHANNEL, notify_in_statement, wakeups

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
    notified: list[str] = []

    def record(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        if "pg_notify" in statement:
            notified.append(statement)

    engine = database.engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        async with database.sessionmaker() as session, session.begin():
            await session.execute(text("SELECT 1"))
            async with session.begin_nested():
                wake_after_commit(session, NAME)
            wake_after_commit(session, NAME)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    expected = 1 if database.engine.dialect.name == "postgresql" else 0
    assert len(notified) == expected, (NOTIFY_CHANNEL, notified)


async def test_a_notify_carried_by_a_statement_is_not_sent_again_at_commit(
    database: Database,
) -> None:
    """``notify_in_statement`` outside a savepoint: its statement carries the NOTIFY and the
    commit sends none of its own; inside one (which a rollback would undo), the commit does."""
    notified: list[str] = []

    def record(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        if "pg_notify" in statement:
            notified.append(statement)

    postgresql = database.engine.dialect.name == "postgresql"
    engine = database.engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        async with database.sessionmaker() as session, session.begin():
            carried = notify_in_statement(session, NAME)
            assert (carried is not None) == postgresql
            if carried is not None:
                await session.execute(select(carried))
        carried_count = len(notified)
        async with database.sessionmaker() as session, session.begin():
            await session.execute(text("SELECT 1"))
            async with session.begin_nested():
                assert notify_in_statement(session, NAME) is None
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert carried_count == (1 if postgresql else 0), notified
    assert len(notified) == (2 if postgresql else 0), notified
