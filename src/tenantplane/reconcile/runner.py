"""The runner that drives one reconciler (reconcile/reconciler.py) on its rows.

It leases up to ``concurrency`` rows at a time, sleeps until the next row is due or a
wake-up hint arrives, and never holds a transaction open across ``act``. The steps of the
rows it leases run in reconcile/steps.py, each with a heartbeat (reconcile/heartbeat.py)
that keeps its lease while ``act`` runs; a step whose lease was lost meanwhile is not
applied. ``Supervisor`` (reconcile/supervisor.py) runs one runner per reconciler.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import secrets
import socket
import time
from collections.abc import Coroutine
from datetime import datetime, timedelta
from typing import Any

import structlog
from sqlalchemy import func, select

from tenantplane.db.clock import database_now
from tenantplane.db.engine import Database
from tenantplane.reconcile.fetcher import Fetcher
from tenantplane.reconcile.hints import Wake, wakeups
from tenantplane.reconcile.lease import UNKNOWN, Lease, ready_condition
from tenantplane.reconcile.metrics import ReconcileMetrics
from tenantplane.reconcile.reconciler import Reconciler
from tenantplane.reconcile.steps import Steps

log = structlog.get_logger(__name__)

#: Rows are arriving when the last fetch that found some ran less than this long ago: a
#: hint then waits for others (``Reconciler.coalesce_seconds``).
STREAM_SECONDS = 0.1

#: How long to wait when the only ready rows are being leased by another process.
_READY_ELSEWHERE_SECONDS = 0.01


def process_identity() -> str:
    return f"{socket.gethostname()[:32]}:{os.getpid()}:{secrets.token_hex(4)}"


class ReconcilerRunner:
    """Drives one reconciler: fetch leases, run them with bounded concurrency, sleep."""

    def __init__(
        self,
        database: Database,
        reconciler: Reconciler[Any, Any],
        *,
        owner: str | None = None,
        idle_poll_seconds: float = 5.0,
        metrics: ReconcileMetrics | None = None,
    ) -> None:
        self.database = database
        self.reconciler = reconciler
        self.owner = owner or process_identity()
        self.idle_poll_seconds = idle_poll_seconds
        self.fetcher = Fetcher(database, reconciler.table, self.owner)
        self.metrics = metrics if metrics is not None else ReconcileMetrics()
        self.metrics.declare(reconciler.name)
        #: Set while the runner waits for a row to fall due or a wake-up (observable by
        #: whoever needs to know that only a hint, or time, will make it look again).
        self.idle = asyncio.Event()
        self._inflight: set[asyncio.Task[None]] = set()
        # Rows in hand (a batch task holds several).
        self._busy = 0
        # When the last fetch that found rows ran (monotonic; coalescing of hints).
        self._last_found = float("-inf")
        # Whether the last fetch found rows.
        self._found = False
        # Whether the loop waits for a slot; until when (monotonic) it sleeps, inf while it
        # asks the database how long to sleep, None when it is not in ``_sleep``.
        self._slot_wait = False
        self._asleep_until: float | None = None
        self._stopping = asyncio.Event()
        self._wake: Wake | None = None
        self._log = log.bind(reconciler=reconciler.name)
        self.steps = Steps(database, reconciler, self.fetcher, self.metrics, self._log)

    def stop(self) -> None:
        """Take no new work; ``run`` returns once the rows in hand are done."""
        self._stopping.set()
        if self._wake is not None:
            self._wake.enough.set()
            self._wake.set()

    async def run(self, shutdown_grace_seconds: float = 10.0) -> None:
        reconciler = self.reconciler
        wake = self._wake = wakeups.subscribe(reconciler.name)
        try:
            while not self._stopping.is_set():
                wake.clear()
                free = self._free()
                if free <= 0:
                    # Every slot is taken: nothing can be fetched, and no due time matters
                    # before a row in hand finishes (which wakes us).
                    await self._wait_for_slot(wake)
                    continue
                if reconciler.acts_in_apply:
                    leases = await self._lease_and_act(free)
                else:
                    leases = await self._lease(free)
                # Hints that came during the fetch still wake the loop (the event), but are
                # not counted: the fetch may have taken their rows.
                wake.reset_hints(free)
                self._found = bool(leases)
                if leases:
                    self._last_found = time.monotonic()
                if leases and not reconciler.acts_in_apply:  # (those are worked already)
                    if reconciler.batched:
                        self._start(self.steps.work_batch(leases), leases, wake)
                    else:
                        for lease in leases:
                            self._start(self.steps.work(lease), [lease], wake)
                if leases and len(leases) == free:
                    # Full batch (more may be ready): come back as soon as a slot frees.
                    await self._wait_for_slot(wake)
                    continue
                if await self._sleep(wake):
                    await self._coalesce(wake)
        finally:
            wakeups.unsubscribe(reconciler.name, wake)
            await self._drain(shutdown_grace_seconds)

    def _free(self) -> int:
        """Rows the next fetch may take."""
        return self.reconciler.concurrency - self._busy

    async def _lease(self, limit: int) -> list[Lease]:
        try:
            leases = await self.fetcher.lease(
                limit, timedelta(seconds=self.reconciler.lease_seconds)
            )
        except Exception:
            self._log.exception("lease fetch failed")
            return []
        for lease in leases:
            self._note_takeover(lease)
        return leases

    async def _lease_and_act(self, limit: int) -> list[Lease]:
        """For a reconciler that ``acts_in_apply``: lease up to ``limit`` ready rows and
        work them, in this loop (one batch at a time, see ``Reconciler.acts_in_apply``);
        the rows leased are returned. On PostgreSQL the lease is committed first (one
        autocommit statement), as for every other reconciler, so that the rows of a worker
        that dies or stalls in the middle of a look are taken over when its leases expire;
        on SQLite ``_look_in_one_transaction``."""
        if self.database.is_sqlite:
            return await self._look_in_one_transaction(limit)
        leases = await self._lease(limit)
        if leases:
            self._busy = len(leases)
            try:
                await self.steps.work_batch(leases)
            finally:
                self._busy = 0
        return leases

    async def _look_in_one_transaction(self, limit: int) -> list[Lease]:
        """SQLite: the lease is taken in the batch's own transaction, one turn of the write
        lock per look, not two; and that turn comes first at the process's write gate
        (``Database.transaction(first=True)``): the outside world of such a reconciler lives
        in this database, and its steps, whose timing it simulates, would otherwise wait
        behind every write queued in the process. A failed batch rolls its leases back with
        it; its rows back off unless another worker has leased them since."""
        reconciler = self.reconciler
        leases = []
        started = time.perf_counter()
        try:
            async with self.database.transaction(first=True) as session:
                leases = await self.fetcher.lease_in(
                    session, limit, timedelta(seconds=reconciler.lease_seconds)
                )
                if not leases:
                    return []
                self._busy = len(leases)
                for lease in leases:
                    self._note_takeover(lease)
                await reconciler.act_and_apply_batch(
                    session, [lease.guard(session) for lease in leases]
                )
        except asyncio.CancelledError:
            raise
        except Exception:
            if not leases:
                self._log.exception("lease fetch failed")
                return []
            await self.steps.failed(leases, "reconcile step failed", leased=False)
        finally:
            self._busy = 0
            if leases:
                self.metrics.steps_done(reconciler.name, len(leases), started)
        return leases

    def _start(
        self, work: Coroutine[Any, Any, None], leases: list[Lease], wake: asyncio.Event
    ) -> None:
        task = asyncio.create_task(work)
        self._inflight.add(task)
        self._busy += len(leases)

        def done(task: asyncio.Task[None]) -> None:
            self._inflight.discard(task)
            self._busy -= len(leases)
            if not self.reconciler.batched or self._slot_wait or self._sooner(leases):
                # A slot freed for a full runner, or a finished row may have scheduled its
                # next step sooner than our sleep.
                wake.set()

        task.add_done_callback(done)

    def _sooner(self, leases: list[Lease]) -> bool:
        """Whether a row of ``leases`` (done) may be due before the loop looks again: when
        the loop is not in ``_sleep`` its next one asks the database, which sees the rows'
        writes (committed before the step ended); while it asks, any time is too late."""
        until = self._asleep_until
        if until is None:
            return False
        left = until - time.monotonic()
        for lease in leases:
            at = lease.next_step()
            if at is UNKNOWN:
                return True
            if isinstance(at, datetime) and (at - lease.now()).total_seconds() < left:
                return True
        return False

    async def _coalesce(self, wake: Wake) -> None:
        """Woken while caught up: if rows are arriving, let more hints come so that one
        fetch takes their rows together: until there are as many as free slots, for at most
        ``coalesce_seconds`` (a bounded delay)."""
        window = self.reconciler.coalesce_seconds
        if window <= 0 or self._stopping.is_set():
            return
        if time.monotonic() - self._last_found > STREAM_SECONDS:
            return  # a first row after a quiet spell: fetched at once
        # The hints counted since the last fetch (the one that woke us among them).
        wake.expect(self.reconciler.concurrency - self._busy)
        timer = asyncio.get_running_loop().call_later(window, wake.enough.set)
        try:
            await wake.enough.wait()
        finally:
            timer.cancel()

    async def queue_depth(self) -> int:
        """Rows due now that no live lease holds."""
        table = self.reconciler.table
        async with self.database.sessionmaker() as session:
            now = await database_now(session)
            statement = select(func.count()).select_from(table).where(ready_condition(table, now))
            return int((await session.execute(statement)).scalar_one())

    async def refresh_metrics(self) -> None:
        name = self.reconciler.name
        self.metrics.queue_depth.labels(name).set(await self.queue_depth())
        self.metrics.in_progress.labels(name).set(self._busy)

    def _note_takeover(self, lease: Lease) -> None:
        if lease.previous_owner is None or lease.previous_owner == self.owner:
            return
        self.metrics.takeovers.labels(self.reconciler.name).inc()
        self._log.info("lease taken over", row_id=lease.row_id, previous_owner=lease.previous_owner)

    async def run_once(self) -> int:
        """Work every row that is ready now, once, and return how many were worked.

        For one-shot commands (``tenantplane billing run``): no sleeping, no polling. A row
        that becomes ready again at once is left for the running reconcilers.
        """
        reconciler = self.reconciler
        seen: set[Any] = set()
        while True:
            leases = await self.fetcher.lease(
                reconciler.concurrency, timedelta(seconds=reconciler.lease_seconds)
            )
            fresh = [lease for lease in leases if lease.row_id not in seen]
            for lease in leases:
                if lease.row_id in seen:
                    async with self.database.transaction() as session:
                        await lease.guard(session).update()
            if not fresh:
                return len(seen)
            seen.update(lease.row_id for lease in fresh)
            if reconciler.batched:
                await self.steps.work_batch(fresh)
            else:
                await asyncio.gather(*(self.steps.work(lease) for lease in fresh))

    async def _drain(self, grace_seconds: float) -> None:
        # Cancelling a task inside a transaction can strand its connection (on SQLite, with
        # the write lock held): rows in hand are finished, and only cancelled after a grace.
        if not self._inflight:
            return
        _, late = await asyncio.wait(set(self._inflight), timeout=grace_seconds)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)

    async def _wait_for_slot(self, wake: asyncio.Event) -> None:
        if self._free() <= 0 and not self._stopping.is_set():
            self._slot_wait = True
            try:
                await wake.wait()
            finally:
                self._slot_wait = False

    async def _sleep(self, wake: asyncio.Event) -> bool:
        """Wait for a wake-up or the next due row; True when woken (a hint or a finished
        row), False when the wait timed out."""
        if wake.is_set():
            # A hint (or a finished row) came while this pass ran: there is work to look
            # for now, and the next-due query would only bound a wait that will not happen.
            return True
        self._asleep_until = math.inf
        try:
            return await self._wait(wake)
        finally:
            self._asleep_until = None

    async def _wait(self, wake: asyncio.Event) -> bool:
        timeout = self.idle_poll_seconds
        try:
            due = await self.fetcher.seconds_until_due()
        except Exception:
            self._log.exception("next-due query failed")
            due = None
        if due is not None:
            timeout = min(timeout, due)
        if self._stopping.is_set():
            return False
        if timeout <= 0:
            if self._found:
                # Due since the last fetch, which took rows (one due while they were
                # worked): fetch at once.
                return True
            # A row is ready that the fetch did not take (another process is leasing it
            # right now): a floor keeps it from spinning us. A row due later is waited for
            # to the moment: a floor there would make every step of it late by up to that.
            timeout = _READY_ELSEWHERE_SECONDS
        self._log.debug("waiting for work", seconds=round(timeout, 3))
        self._asleep_until = time.monotonic() + timeout
        self.idle.set()
        try:
            # (``asyncio.timeout``: on Python 3.11 ``wait_for`` can swallow a cancellation
            # that arrives as the wait ends, db/write_gate.py ``take_turn``.)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await wake.wait()
        finally:
            self.idle.clear()
        return wake.is_set()
