"""The embedded database: many connections opening a new file together all get in."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from sqlalchemy import text

from tenantplane.db.engine import Database, make_engine


async def _open_together(database: Path, engines: int, connections_each: int) -> None:
    url = f"sqlite+aiosqlite:///{database}"
    opened = [make_engine(url) for _ in range(engines)]

    async def query(engine_index: int) -> None:
        async with opened[engine_index].connect() as connection:
            assert (await connection.execute(text("SELECT 1"))).scalar_one() == 1

    try:
        await asyncio.gather(
            *(query(index) for index in range(engines) for _ in range(connections_each))
        )
    finally:
        for engine in opened:
            await engine.dispose()


async def test_connections_opening_a_new_file_together_are_not_refused(tmp_path: Path) -> None:
    # Each round is a new file: the race is in switching a fresh file to WAL mode, which
    # SQLite refuses at once ("database is locked") instead of waiting its busy timeout.
    for round_number in range(40):
        database = tmp_path / f"round-{round_number}.db"
        await _open_together(database, engines=4, connections_each=3)
        with sqlite3.connect(database) as check:
            assert check.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_reads_take_no_write_lock_and_writes_queue_for_it(tmp_path: Path) -> None:
    """A writer holding the lock (BEGIN IMMEDIATE) delays other writers, never a reader:
    the reader sees the last committed state."""
    database = Database.connect(f"sqlite:///{tmp_path / 'locks.db'}")
    try:
        async with database.transaction() as setup:
            await setup.execute(text("CREATE TABLE counted (x INTEGER)"))
        async with database.transaction() as writing:
            await writing.execute(text("INSERT INTO counted VALUES (1)"))
            async with database.reader() as reading:
                count = await reading.execute(text("SELECT count(*) FROM counted"))
                assert count.scalar_one() == 0
            queued = asyncio.create_task(_insert_one(database))
            await asyncio.sleep(0.05)
            assert not queued.done()  # waiting for the lock, not failed
        await queued
        async with database.reader() as reading:
            count = await reading.execute(text("SELECT count(*) FROM counted"))
            assert count.scalar_one() == 2
    finally:
        await database.dispose()


async def _insert_one(database: Database) -> None:
    async with database.transaction() as session:
        await session.execute(text("INSERT INTO counted VALUES (2)"))
