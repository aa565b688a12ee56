"""SQLite's writers of one process take turns at the process's gate, in arrival order, and
never wait in SQLite's busy handler for each other (db/write_gate.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from tenantplane.db import write_gate
from tenantplane.db.engine import Database
from tenantplane.db.errors import DatabaseTrouble, classify
from tests.statements import statements_sent


@pytest.fixture
async def embedded(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database.connect(f"sqlite:///{tmp_path / 'gate.db'}")
    async with database.transaction() as setup:
        await setup.execute(text("CREATE TABLE turns (writer TEXT)"))
    yield database
    await database.dispose()


async def _write(database: Database, writer: str) -> None:
    async with database.transaction() as session:
        await session.execute(text("INSERT INTO turns VALUES (:writer)"), {"writer": writer})


def _begins(sent: list[str]) -> int:
    return sum(statement == "BEGIN IMMEDIATE" for statement in sent)


async def test_writers_wait_at_the_gate_and_write_in_arrival_order(embedded: Database) -> None:
    with statements_sent(embedded.engine) as sent:
        async with embedded.transaction() as holding:
            await holding.execute(text("INSERT INTO turns VALUES ('first')"))
            queued = []
            for writer in ("second", "third", "fourth"):
                queued.append(asyncio.create_task(_write(embedded, writer)))
                await asyncio.sleep(0.05)  # each arrives after the one before
            # Waiting at the gate: not one of them asked SQLite for the lock.
            assert _begins(sent) == 1
            assert not any(task.done() for task in queued)
        await asyncio.gather(*queued)
    assert _begins(sent) == 4
    async with embedded.reader() as reading:
        order = (await reading.execute(text("SELECT writer FROM turns ORDER BY rowid"))).all()
    assert [writer for (writer,) in order] == ["first", "second", "third", "fourth"]


async def _fail_in_a_write(database: Database) -> None:
    async with database.transaction() as session:
        await session.execute(text("INSERT INTO turns VALUES ('rolled back')"))
        raise RuntimeError("the route failed")


async def test_a_failed_transaction_hands_its_turn_on(embedded: Database) -> None:
    with pytest.raises(RuntimeError, match="the route failed"):
        await _fail_in_a_write(embedded)
    await asyncio.wait_for(_write(embedded, "next"), 10)
    async with embedded.reader() as reading:
        rows = (await reading.execute(text("SELECT writer FROM turns"))).all()
    assert rows == [("next",)]


async def test_a_writer_without_a_turn_in_time_fails_as_a_busy_database(
    embedded: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(write_gate, "GATE_TIMEOUT_SECONDS", 0.2)
    async with embedded.transaction() as holding:
        await holding.execute(text("INSERT INTO turns VALUES ('holding')"))
        with pytest.raises(OperationalError, match="database is locked") as failed:
            await _write(embedded, "late")
    assert classify(failed.value) is DatabaseTrouble.busy  # answered 503 with Retry-After
    await asyncio.wait_for(_write(embedded, "after"), 10)  # the gate was not left taken


async def _write_first(database: Database, writer: str) -> None:
    async with database.transaction(first=True) as session:
        await session.execute(text("INSERT INTO turns VALUES (:writer)"), {"writer": writer})


async def test_writers_that_go_first_alternate_with_the_others(embedded: Database) -> None:
    """A free gate goes to the first line, never twice in a row while another writer
    waits; each line keeps its arrival order."""
    async with embedded.transaction() as holding:
        await holding.execute(text("INSERT INTO turns VALUES ('holding')"))
        queued = []
        arrivals = [("r1", False), ("r2", False), ("f1", True), ("r3", False), ("f2", True)]
        arrivals += [("f3", True)]
        for writer, first in arrivals:
            write = _write_first if first else _write
            queued.append(asyncio.create_task(write(embedded, writer)))
            await asyncio.sleep(0.05)  # each arrives after the one before
        assert not any(task.done() for task in queued)
    await asyncio.gather(*queued)
    async with embedded.reader() as reading:
        order = (await reading.execute(text("SELECT writer FROM turns ORDER BY rowid"))).all()
    assert [writer for (writer,) in order] == ["holding", "f1", "r1", "f2", "r2", "f3", "r3"]


async def test_a_writer_that_gives_up_leaves_no_turn_behind(embedded: Database) -> None:
    """A waiter cancelled in either line (its client gone) is skipped; the gate is free
    afterwards."""
    async with embedded.transaction() as holding:
        await holding.execute(text("INSERT INTO turns VALUES ('holding')"))
        leaving = [
            asyncio.create_task(_write_first(embedded, "gone first")),
            asyncio.create_task(_write(embedded, "gone")),
        ]
        staying = asyncio.create_task(_write(embedded, "stays"))
        await asyncio.sleep(0.05)
        for task in leaving:
            task.cancel()
        await asyncio.gather(*leaving, return_exceptions=True)
    await asyncio.wait_for(staying, 10)
    await asyncio.wait_for(_write_first(embedded, "after"), 10)
    async with embedded.reader() as reading:
        order = (await reading.execute(text("SELECT writer FROM turns ORDER BY rowid"))).all()
    assert [writer for (writer,) in order] == ["holding", "stays", "after"]


async def test_a_writer_cancelled_as_its_turn_comes_ends_cancelled_and_hands_the_turn_on() -> None:
    """Cancelled in the same turn of the loop as the gate is handed to it (its batch ended,
    its client gone): the waiter ends cancelled, not holding the gate, and the gate goes on.
    Through ``asyncio.wait_for`` on Python 3.11 it went on as if not cancelled."""
    gate = write_gate.WriteGate()
    await gate.acquire()
    waiting = asyncio.create_task(write_gate.take_turn(gate))
    await asyncio.sleep(0)  # in the line
    gate.release()  # its turn
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await asyncio.wait_for(gate.acquire(), 1)  # free: the turn was handed on
