"""What SQL an engine (or a database) sends: for tests that count or inspect statements."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from tenantplane.db.engine import Database


@contextmanager
def statements_sent(sender: AsyncEngine | Database) -> Iterator[list[str]]:
    """Every statement sent through the engine (a database's: its sessions') while the block
    runs, its whitespace collapsed and upper-cased (``INSERT INTO SECRETS``, ``PG_NOTIFY``)."""
    sent: list[str] = []

    def record(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        sent.append(" ".join(statement.split()).upper())

    engine = sender.engine if isinstance(sender, Database) else sender
    sync_engine = engine.sync_engine
    event.listen(sync_engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(sync_engine, "before_cursor_execute", record)


def notifies(statements: list[str]) -> list[str]:
    """The statements of ``statements_sent`` that send a NOTIFY (a wake-up hint)."""
    return [statement for statement in statements if "PG_NOTIFY" in statement]
