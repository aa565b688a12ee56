"""Plain reads that wait for a PostgreSQL read connection (db/read_queue.py): answered in
batches of one statement, each with its own rows or its own error, given up after the
pool's timeout, and never stuck behind a caller that went away."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from sqlalchemy import bindparam, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from tenantplane.db import read_queue
from tenantplane.db.engine import Database
from tenantplane.db.postgres_reads import PostgresReads
from tenantplane.db.urls import libpq_dsn
from tests.backends import postgres_database

# A read that holds the one connection for a while, so that the reads after it queue.
SLOW = text("SELECT pg_sleep(:seconds), 'slow' AS tag").bindparams(bindparam("seconds"))
ECHO = text("SELECT CAST(:value AS integer) AS value, 100 / CAST(:value AS integer) AS share")
DOUBLE = text("SELECT CAST(:value AS integer) * 2 AS value")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with postgres_database("tenantplane_read_queue") as created:
        yield created


@asynccontextmanager
async def plain_reads(url: str, *, wait_seconds: float = 5) -> AsyncIterator[PostgresReads]:
    database = Database.connect(url)
    reads = PostgresReads(
        libpq_dsn(url),
        database.engine.dialect,
        size=1,
        timeout_seconds=wait_seconds,
        connect_timeout_seconds=5,
        session_options="",
    )
    try:
        yield reads
    finally:
        await reads.dispose()
        await database.dispose()


@pytest.fixture
def batches(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """The values of each batch the queue hands out, as they are taken."""
    taken: list[list[int]] = []
    take: Callable[[read_queue.ReadQueue], list[read_queue.Read]] = read_queue.ReadQueue.take

    def recording(queue: read_queue.ReadQueue) -> list[read_queue.Read]:
        batch = take(queue)
        if batch:
            taken.append([dict(read.statements[0][1]).get("value", -1) for read in batch])
        return batch

    monkeypatch.setattr(read_queue.ReadQueue, "take", recording)
    return taken


def _echo(reads: PostgresReads, value: int) -> Callable[[], Awaitable[Any]]:
    return lambda: reads.first(ECHO, {"value": value})


async def _behind_slow_read(reads: PostgresReads, *reads_after: Any) -> list[Any]:
    """``reads_after`` (coroutine functions) started while a slow read holds the connection."""
    slow = asyncio.create_task(reads.first(SLOW, {"seconds": 0.3}))
    await asyncio.sleep(0.05)  # the slow read has the connection
    answers = await asyncio.gather(*(read() for read in reads_after), return_exceptions=True)
    assert (await slow) is not None
    return answers


async def test_waiting_reads_of_one_statement_go_together_each_with_its_own_rows(
    url: str, batches: list[list[int]]
) -> None:
    async with plain_reads(url) as reads:
        values = range(1, 9)
        answers = await _behind_slow_read(reads, *(_echo(reads, value) for value in values))
        assert [tuple(row) for row in answers] == [(value, 100 // value) for value in values]
        assert batches == [list(values)]
        # all() of the same statement shares the batch and gets every row
        many = await _behind_slow_read(
            reads,
            lambda: reads.all(ECHO, {"value": 4}),
            lambda: reads.first(ECHO, {"value": 5}),
        )
        assert [tuple(row) for row in many[0]] == [(4, 25)]
        assert tuple(many[1]) == (5, 20)


async def test_a_batch_is_one_statement_in_arrival_order(
    url: str, batches: list[list[int]]
) -> None:
    async with plain_reads(url) as reads:
        answers = await _behind_slow_read(
            reads,
            lambda: reads.first(ECHO, {"value": 1}),
            lambda: reads.first(ECHO, {"value": 2}),
            lambda: reads.first(DOUBLE, {"value": 3}),
            lambda: reads.first(ECHO, {"value": 4}),
        )
        assert [row[0] for row in answers] == [1, 2, 6, 4]
        assert batches == [[1, 2], [3], [4]]


async def test_a_read_that_fails_in_a_batch_fails_alone(url: str, batches: list[list[int]]) -> None:
    async with plain_reads(url) as reads:
        answers = await _behind_slow_read(reads, *(_echo(reads, value) for value in (5, 0, 20)))
        assert tuple(answers[0]) == (5, 20)
        assert isinstance(answers[1], DBAPIError)
        assert "division by zero" in str(answers[1])
        assert tuple(answers[2]) == (20, 5)
        assert batches == [[5, 0, 20]]
        # the connection serves on
        assert tuple(await reads.first(ECHO, {"value": 10}) or ()) == (10, 10)


async def test_a_waiting_read_gives_up_after_the_pool_timeout(url: str) -> None:
    async with plain_reads(url, wait_seconds=0.2) as reads:
        slow = asyncio.create_task(reads.first(SLOW, {"seconds": 0.6}))
        await asyncio.sleep(0.05)
        with pytest.raises(PoolTimeout, match=r"no plain-reads connection within 0\.2 s"):
            await reads.first(ECHO, {"value": 1})
        assert (await slow) is not None  # taken, a read runs to its end
        assert tuple(await reads.first(ECHO, {"value": 2}) or ()) == (2, 50)


async def test_a_caller_that_went_away_leaves_the_queue_moving(
    url: str, batches: list[list[int]]
) -> None:
    async with plain_reads(url, wait_seconds=2) as reads:
        slow = asyncio.create_task(reads.first(SLOW, {"seconds": 0.3}))
        await asyncio.sleep(0.05)
        gone = asyncio.create_task(reads.first(ECHO, {"value": 1}))
        kept = asyncio.create_task(reads.first(ECHO, {"value": 2}))
        await asyncio.sleep(0.05)
        gone.cancel()
        assert tuple(await kept or ()) == (2, 50)
        await slow
        assert gone.cancelled()
        assert batches == [[2]]  # the cancelled read was never sent
        # every slot came back: reads run at once again, one after another
        for value in (3, 4):
            assert tuple(await reads.first(ECHO, {"value": value}) or ()) == (value, 100 // value)
        assert batches == [[2]]


async def test_snapshots_wait_their_turn_and_run_alone(url: str, batches: list[list[int]]) -> None:
    async with plain_reads(url) as reads:
        answers = await _behind_slow_read(
            reads,
            lambda: reads.snapshot((ECHO, {"value": 1}), (ECHO, {"value": 2})),
            lambda: reads.first(ECHO, {"value": 4}),
        )
        assert [tuple(rows[0]) for rows in answers[0]] == [(1, 100), (2, 50)]
        assert tuple(answers[1]) == (4, 25)
        assert batches == [[1], [4]]


async def test_reads_waiting_when_the_pool_closes_are_refused_not_left_waiting(url: str) -> None:
    async with plain_reads(url) as reads:
        slow = asyncio.create_task(reads.first(SLOW, {"seconds": 0.3}))
        await asyncio.sleep(0.05)
        waiting = [asyncio.create_task(reads.first(ECHO, {"value": value})) for value in (1, 2)]
        await asyncio.sleep(0.05)
        await reads.dispose()
        answers = await asyncio.wait_for(
            asyncio.gather(slow, *waiting, return_exceptions=True), timeout=10
        )
        assert all(isinstance(answer, Exception) for answer in answers[1:]), answers
        # a read after it opens a new pool, with a new queue, and is answered
        assert tuple(await reads.first(ECHO, {"value": 5}) or ()) == (5, 20)
