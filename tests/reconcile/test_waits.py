"""How the runner waits: never asking the database while every slot is taken, and sleeping
to the moment the next row falls due."""

from __future__ import annotations

import asyncio
import time

import pytest

from tenantplane.db.engine import Database
from tenantplane.reconcile import ReconcilerRunner
from tenantplane.reconcile.fence import Fence
from tenantplane.reconcile.hints import wake_now
from tests.factories import Factory
from tests.reconcile.test_framework import (
    DEADLINE_SECONDS,
    CountingReconciler,
    Seen,
    add_rows,
    observed,
    wait_until,
)
from tests.statements import statements_sent


class HeldReconciler(CountingReconciler):
    """Acts only once ``release`` is set; ``full`` is set while every slot is acting."""

    def __init__(self, concurrency: int) -> None:
        super().__init__(concurrency)
        self.release = asyncio.Event()
        self.full = asyncio.Event()

    async def act(self, snapshot: Seen, fence: Fence) -> int:
        self.running += 1
        if self.running == self.concurrency:
            self.full.set()
        await self.release.wait()
        self.running -= 1
        self.acted.append(snapshot.row_id)
        return snapshot.generation


async def test_a_full_runner_waits_for_a_slot_without_asking_the_database(
    database: Database, factory: Factory
) -> None:
    tenant = await factory.tenant()
    ids = await add_rows(database, tenant.id, 3, due=True)
    reconciler = HeldReconciler(concurrency=2)
    runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)
    task = asyncio.create_task(runner.run())
    try:
        await asyncio.wait_for(reconciler.full.wait(), DEADLINE_SECONDS)
        # Hints keep coming meanwhile (new rows, as in a burst of creates): a runner woken
        # while full asked the database for the next due time at each of them.
        with statements_sent(database.engine) as sent:
            for _ in range(10):
                wake_now(reconciler.name)
                await asyncio.sleep(0.01)
        assert sent == []
        reconciler.release.set()

        async def all_done() -> bool:
            return all(value == 1 for value in (await observed(database)).values())

        await wait_until(all_done, "every row reconciled once a slot freed")
    finally:
        reconciler.release.set()
        runner.stop()
        await task
    assert sorted(reconciler.acted) == sorted(ids)


@pytest.mark.parametrize(
    ("due_in", "longest_wait"),
    [
        # Due in 2 ms: waited for to the moment, not to a floor (every step would be late).
        (0.002, 0.002),
        # Ready now yet not taken by the fetch (another process is leasing it): a floor.
        (0.0, 0.01),
    ],
)
async def test_the_runner_sleeps_until_the_next_row_is_due(
    database: Database, due_in: float, longest_wait: float
) -> None:
    runner = ReconcilerRunner(database, CountingReconciler(), idle_poll_seconds=3600)

    answered: list[float] = []

    async def next_due() -> float:
        answered.append(time.monotonic())
        return due_in

    # When the next row is due, as the database would answer, without timing a real row.
    runner.fetcher.seconds_until_due = next_due  # type: ignore[method-assign]
    task = asyncio.create_task(runner.run())
    try:
        await asyncio.wait_for(runner.idle.wait(), DEADLINE_SECONDS)
        asleep_until = runner._asleep_until
    finally:
        runner.stop()
        await task
    assert asleep_until is not None
    # The timeout the runner chose on that answer.
    assert asleep_until - answered[0] == pytest.approx(longest_wait, abs=0.0005)
