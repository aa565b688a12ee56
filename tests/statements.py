"""What SQL an engine (or a database) sends: for tests that count or inspect statements."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from tenantplane.db.engine import Database
from tenantplane.db.writes import PostgresWrites


@contextmanager
def statements_sent(sender: AsyncEngine | Database) -> Iterator[list[str]]:
    """Every statement sent while the block runs, its whitespace collapsed and upper-cased
    (``INSERT INTO SECRETS``, ``PG_NOTIFY``): through the engine, and for a database also its
    one-statement writes (db/writes.py; on SQLite they go through the engine)."""
    sent: list[str] = []

    def record_sql(statement: str) -> None:
        sent.append(" ".join(statement.split()).upper())

    def record(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        record_sql(statement)

    engine = sender.engine if isinstance(sender, Database) else sender
    writes = sender.writes if isinstance(sender, Database) else None
    sync_engine = engine.sync_engine
    event.listen(sync_engine, "before_cursor_execute", record)
    if isinstance(writes, PostgresWrites):
        writes.listeners.append(record_sql)
    try:
        yield sent
    finally:
        event.remove(sync_engine, "before_cursor_execute", record)
        if isinstance(writes, PostgresWrites):
            writes.listeners.remove(record_sql)


def notifies(statements: list[str]) -> list[str]:
    """The statements of ``statements_sent`` that send a NOTIFY (a wake-up hint)."""
    return [statement for statement in statements if "PG_NOTIFY" in statement]
