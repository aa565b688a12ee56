"""Reconcilers and the runner that drives them.

A reconciler turns one leased row into progress in three steps:

1. ``load`` in a short session: read the row and what else is needed into a plain snapshot;
2. ``act`` with no session open: call the outside world (idempotent calls only), holding
   the lease's ``Fence`` before each side effect (reconcile/fence.py);
3. ``apply`` in a new short session: write what was observed through the ``LeaseGuard``
   (0 rows updated = the lease was lost; the result is discarded).

The runner leases up to ``concurrency`` rows at a time, sleeps until the next row is due or
a wake-up hint arrives, and never holds a transaction open across ``act``. While ``act``
runs, a heartbeat renews the row's lease every third of its duration (dstack's
``Heartbeater``), so a slow step keeps its row; a step whose lease was lost meanwhile is not
applied.

A reconciler may declare ``batched = True``: the rows of one lease fetch are then worked as
one batch (``load_batch`` in one session, the acts concurrently with one heartbeat for them
all, ``apply_batch`` in one session), so that a reconciler whose steps are single statements
reads and writes a whole batch in a statement or two instead of two per row (and, through
``act_batch``, calls an outside world that takes many calls at once in one).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import secrets
import socket
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar, Generic, TypeVar

import structlog
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.schema import Table

from tenantplane.db.clock import database_now
from tenantplane.db.engine import Database
from tenantplane.reconcile.fence import Fence, LeaseLost
from tenantplane.reconcile.fetcher import Fetcher
from tenantplane.reconcile.hints import Wake, wakeups
from tenantplane.reconcile.lease import UNKNOWN, Lease, LeaseGuard, ready_condition
from tenantplane.reconcile.metrics import ReconcileMetrics

log = structlog.get_logger(__name__)

#: Rows are arriving when the last fetch that found some ran less than this long ago: a
#: hint then waits for others (``Reconciler.coalesce_seconds``).
STREAM_SECONDS = 0.1

#: How long to wait when the only ready rows are being leased by another process.
_READY_ELSEWHERE_SECONDS = 0.01

Snapshot = TypeVar("Snapshot")
Outcome = TypeVar("Outcome")
Sessions = Callable[[], contextlib.AbstractAsyncContextManager[AsyncSession]]


class Reconciler(ABC, Generic[Snapshot, Outcome]):
    """One kind of asynchronous work; subclass it, list its factory in tenantplane.reconcilers."""

    #: Name used by wake-up hints (``wake_after_commit(session, name)``) and logs.
    name: ClassVar[str]
    #: The table of rows with the ``Leased`` columns (``Model.__table__``).
    table: ClassVar[Table]
    #: Rows worked on at once by one runner.
    concurrency: int = 8
    #: How long a lease lasts; ``act`` must finish well within it.
    lease_seconds: float = 30.0
    #: Delay before a row whose ``act`` or ``apply`` raised is tried again.
    error_backoff_seconds: float = 5.0
    #: True when ``load`` only reads, and ``apply`` makes each change in one statement that
    #: stands alone (checked under the lease in that statement, never relying on a lock or
    #: a read taken by an earlier one): on PostgreSQL both then run in autocommit
    #: (``Database.statements``), without the BEGIN and COMMIT round trips around them.
    single_statements: ClassVar[bool] = False
    #: True when ``load`` (and ``load_batch``) reads in one statement: on PostgreSQL it then
    #: runs in autocommit even if ``apply`` needs a transaction (a lone read needs none).
    load_in_one_statement: ClassVar[bool] = False
    #: True when the rows of one lease fetch are worked as one batch: ``load_batch`` in one
    #: session, every ``act`` at once (one heartbeat renewing all their leases),
    #: ``apply_batch`` in one session. A failure of ``load_batch`` or ``apply_batch`` backs
    #: off every row of the batch; a failing ``act`` only its own row. The defaults loop
    #: over ``load`` and ``apply``; a reconciler overrides them to read and write the whole
    #: batch in a statement or two.
    batched: bool = False
    #: When a wake-up hint finds the runner caught up (its last fetch was not a full batch)
    #: and rows are arriving (the last fetch found some, less than ``STREAM_SECONDS`` ago),
    #: wait for as many hints as the runner has free slots, at most this long, before
    #: fetching, so that one fetch takes the rows of several hints. 0: fetch at once.
    #: Bounds the delay a hint may add to a row's first step; a first row after a quiet
    #: spell is not delayed.
    coalesce_seconds: float = 0.0

    #: True (with ``batched``) when a batch is loaded, acted on and applied in one
    #: transaction (``act_and_apply_batch``) instead of ``load_batch``, ``act_batch`` with
    #: no session open and ``apply_batch``: for an outside world that is in fact a few
    #: statements on this same database (the cluster simulator), where a transaction of
    #: its own per batch would be the larger part of a step's cost. Such batches are worked
    #: one at a time, each taking every row due by then (up to ``concurrency``): a second
    #: batch beside the first only makes every statement of both wait for the other's
    #: turns of the event loop and of the database (under a burst of 1,000 creations, each
    #: statement took 5-14 ms with several batches in flight, 0.2-1.5 ms with one), and
    #: the rows due meanwhile are taken together by the next.
    acts_in_apply: bool = False

    @abstractmethod
    async def load(self, session: AsyncSession, row_id: Any) -> Snapshot | None:
        """Read what ``act`` needs; None when there is nothing to do (the lease is ended)."""

    @abstractmethod
    async def act(self, snapshot: Snapshot, fence: Fence) -> Outcome:
        """Call the outside world. No database session is open here. Before each side
        effect, ``await fence.hold()`` (or write inside ``fence.held()``): it raises
        ``LeaseLost`` once the lease is gone, and nothing more may be done."""

    @abstractmethod
    async def apply(
        self, session: AsyncSession, guard: LeaseGuard, snapshot: Snapshot, outcome: Outcome
    ) -> None:
        """Record the outcome through ``guard`` (which also ends the lease)."""

    async def load_batch(
        self, session: AsyncSession, row_ids: Sequence[Any]
    ) -> dict[Any, Snapshot | None]:
        """``load`` for every row of a batch (``batched``), in one session."""
        return {row_id: await self.load(session, row_id) for row_id in row_ids}

    async def act_batch(
        self, snapshots: Sequence[Snapshot], fences: Sequence[Fence]
    ) -> list[Outcome | BaseException]:
        """``act`` for every row of a batch (``batched``), no session open, each under its
        own row's fence: one result per snapshot, in order, an exception in place of the
        outcome of an act that raised (it backs off its row only; ``LeaseLost``: the row
        is left to whoever holds it). The default runs the acts concurrently; a reconciler
        whose outside world takes many calls at once overrides it."""
        if len(snapshots) == 1:
            # No task for a batch of one.
            try:
                return [await self.act(snapshots[0], fences[0])]
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                return [exc]
        return list(
            await asyncio.gather(
                *(
                    self.act(snapshot, fence)
                    for snapshot, fence in zip(snapshots, fences, strict=True)
                ),
                return_exceptions=True,
            )
        )

    async def apply_batch(
        self, session: AsyncSession, batch: Sequence[tuple[LeaseGuard, Snapshot, Outcome]]
    ) -> None:
        """``apply`` for every row of a batch (``batched``), in one session; each row only
        under its own guard, as ``apply`` does."""
        for guard, snapshot, outcome in batch:
            await self.apply(session, guard, snapshot, outcome)

    async def act_and_apply_batch(
        self, session: AsyncSession, guards: Sequence[LeaseGuard]
    ) -> None:
        """Load every row of a batch still held, act for it and apply the outcome, in one
        transaction (``acts_in_apply``); a failure backs off every row of the batch."""
        raise NotImplementedError(f"{type(self).__name__} does not act in its apply")


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
                        self._start(self._work_batch(leases), leases, wake)
                    else:
                        for lease in leases:
                            self._start(self._work(lease), [lease], wake)
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
                await self._work_batch(leases)
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
            await self._failed(leases, "reconcile step failed", leased=False)
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
                await self._work_batch(fresh)
            else:
                await asyncio.gather(*(self._work(lease) for lease in fresh))

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

    async def _work(self, lease: Lease) -> None:
        with self.metrics.step(self.reconciler.name):
            await self._step(lease)

    async def _step(self, lease: Lease) -> None:
        reconciler = self.reconciler
        steps, loads = self._sessions()
        try:
            async with loads() as session:
                snapshot = await reconciler.load(session, lease.row_id)
                if snapshot is None:
                    await lease.guard(session).update(reconcile_at=None)
                    return
            async with self._heartbeat(lease) as held:
                outcome = await reconciler.act(snapshot, self._fence(lease))
            if not held.is_set():
                # Taken over (or the row deleted) while we worked: the result is stale.
                self._log.warning("lease lost during the step", row_id=lease.row_id)
                return
            async with steps() as session:
                await reconciler.apply(session, lease.guard(session), snapshot, outcome)
        except asyncio.CancelledError:
            raise
        except LeaseLost:
            self._lost(lease)
        except Exception:
            self.metrics.failures.labels(reconciler.name).inc()
            self._log.exception("reconcile step failed", row_id=lease.row_id)
            await self._back_off(lease)

    def _fence(self, lease: Lease) -> Fence:
        return Fence(self.database, lease, timedelta(seconds=self.reconciler.lease_seconds))

    def _lost(self, lease: Lease) -> None:
        """An act stopped before a side effect: its lease had lapsed or was taken over, or
        the row is gone. Nothing to back off: the row is whoever holds it now's."""
        self._log.warning("lease lost before a side effect; the step stopped", row_id=lease.row_id)

    def _sessions(self) -> tuple[Sessions, Sessions]:
        """The sessions a step's ``apply`` and its ``load`` run in."""
        database, reconciler = self.database, self.reconciler
        steps = database.statements if reconciler.single_statements else database.transaction
        loads = database.statements if reconciler.load_in_one_statement else steps
        return steps, loads

    @contextlib.asynccontextmanager
    async def _heartbeat(self, lease: Lease) -> AsyncIterator[asyncio.Event]:
        """Renew ``lease`` every third of its duration while the block runs; the event
        yielded is cleared once a renewal finds the lease lost."""
        held = asyncio.Event()
        held.set()
        duration = timedelta(seconds=self.reconciler.lease_seconds)

        async def beat() -> None:
            while True:
                # A timer, not synchronisation: renewals are due at fixed intervals.
                await asyncio.sleep(self.reconciler.lease_seconds / 3)
                try:
                    renewed = await self.fetcher.renew(lease, duration)
                except Exception:
                    # Transient (database busy or away): the next beat tries again, and
                    # the lease is still valid until its last renewal's expiry.
                    self._log.warning("lease renewal failed", row_id=lease.row_id, exc_info=True)
                    continue
                if not renewed:
                    held.clear()
                    return

        task = asyncio.create_task(beat())
        try:
            yield held
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _work_batch(self, leases: list[Lease]) -> None:
        started = time.perf_counter()
        try:
            await self._step_batch(leases)
        finally:
            self.metrics.steps_done(self.reconciler.name, len(leases), started)

    async def _step_batch(self, leases: list[Lease]) -> None:
        """``_step`` for the rows of one fetch together (``Reconciler.batched``)."""
        reconciler = self.reconciler
        steps, loads = self._sessions()
        if reconciler.acts_in_apply:
            await self._act_and_apply(leases, steps)
            return
        try:
            async with loads() as session:
                snapshots = await reconciler.load_batch(session, [lease.row_id for lease in leases])
                for lease in leases:
                    if snapshots.get(lease.row_id) is None:
                        await lease.guard(session).update(reconcile_at=None)
        except asyncio.CancelledError:
            raise
        except Exception:
            await self._failed(leases, "reconcile step failed")
            return
        working = [lease for lease in leases if snapshots.get(lease.row_id) is not None]
        if not working:
            return
        async with self._heartbeat_batch(working) as held:
            results: list[Any]
            try:
                results = await reconciler.act_batch(
                    [snapshots[lease.row_id] for lease in working],
                    [self._fence(lease) for lease in working],
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                # A call made for the whole batch failed: every row of it backs off.
                results = [exc] * len(working)
        batch: list[tuple[Lease, Any, Any]] = []
        for lease, result in zip(working, results, strict=True):
            if isinstance(result, asyncio.CancelledError):
                raise result
            if isinstance(result, LeaseLost):
                self._lost(lease)
            elif isinstance(result, BaseException):
                await self._failed([lease], "reconcile step failed", result)
            elif lease.row_id not in held:
                # Taken over (or the row deleted) while we worked: the result is stale.
                self._log.warning("lease lost during the step", row_id=lease.row_id)
            else:
                batch.append((lease, snapshots[lease.row_id], result))
        if not batch:
            return
        try:
            async with steps() as session:
                await reconciler.apply_batch(
                    session,
                    [
                        (lease.guard(session), snapshot, outcome)
                        for lease, snapshot, outcome in batch
                    ],
                )
        except asyncio.CancelledError:
            raise
        except Exception:
            await self._failed([lease for lease, _, _ in batch], "reconcile step failed")

    async def _act_and_apply(self, leases: list[Lease], steps: Sessions) -> None:
        """``_step_batch`` for a reconciler that ``acts_in_apply``: no heartbeat (the
        transaction is a few statements long), no stale outcome (the reconciler reads, and
        acts for, only the rows it finds still held, locked, in that transaction)."""
        try:
            async with steps() as session:
                await self.reconciler.act_and_apply_batch(
                    session, [lease.guard(session) for lease in leases]
                )
        except asyncio.CancelledError:
            raise
        except Exception:
            await self._failed(leases, "reconcile step failed")

    async def _failed(
        self,
        leases: Sequence[Lease],
        event: str,
        error: BaseException | None = None,
        *,
        leased: bool = True,
    ) -> None:
        """Count, log (with the exception being handled, or ``error``) and back off rows:
        under their leases, or (``leased=False``: the leases were rolled back with the
        failed transaction) those that no live lease holds."""
        self.metrics.failures.labels(self.reconciler.name).inc(len(leases))
        exc_info = error if error is not None else True
        for lease in leases:
            self._log.error(event, row_id=lease.row_id, exc_info=exc_info)
            if leased:
                await self._back_off(lease)
        if not leased:
            with contextlib.suppress(Exception):
                await self.fetcher.back_off_unheld(
                    [lease.row_id for lease in leases], self.reconciler.error_backoff_seconds
                )

    @contextlib.asynccontextmanager
    async def _heartbeat_batch(self, leases: list[Lease]) -> AsyncIterator[set[Any]]:
        """``_heartbeat`` for the rows of a batch: every third of the lease, one statement
        renews all their leases. Yields the keys of the rows still held (a renewal that
        misses a row removes it). No task exists unless the block outlasts a third of the
        lease: a timer starts the beats."""
        held = {lease.row_id for lease in leases}
        interval = self.reconciler.lease_seconds / 3
        duration = timedelta(seconds=self.reconciler.lease_seconds)
        beating: list[asyncio.Task[None]] = []

        async def beat() -> None:
            while True:
                mine = [lease for lease in leases if lease.row_id in held]
                try:
                    renewed = await self.fetcher.renew_many(mine, duration)
                except Exception:
                    # Transient: the next beat tries again (each lease stays valid until
                    # its last renewal's expiry).
                    self._log.warning("lease renewal failed", rows=len(mine), exc_info=True)
                else:
                    held.intersection_update(renewed)
                    if not held:
                        return
                # A timer, not synchronisation: renewals are due at fixed intervals.
                await asyncio.sleep(interval)

        timer = asyncio.get_running_loop().call_later(
            interval, lambda: beating.append(asyncio.create_task(beat()))
        )
        try:
            yield held
        finally:
            timer.cancel()
            for task in beating:
                task.cancel()
            await asyncio.gather(*beating, return_exceptions=True)

    async def _back_off(self, lease: Lease) -> None:
        with contextlib.suppress(Exception):
            async with self.database.transaction() as session:
                await lease.guard(session).retry_in(self.reconciler.error_backoff_seconds)


class Supervisor:
    """Runs every reconciler of this process until stopped (app lifespan, `worker`)."""

    def __init__(
        self,
        database: Database,
        reconcilers: list[Reconciler[Any, Any]],
        *,
        idle_poll_seconds: float = 5.0,
        on_stopped: Callable[[], Awaitable[Any]] | None = None,
        metrics: ReconcileMetrics | None = None,
    ) -> None:
        owner = process_identity()
        self.database = database
        self.metrics = metrics if metrics is not None else ReconcileMetrics()
        # Closes what the reconcilers share (clients of remote services), once they are done.
        self._on_stopped = on_stopped
        self._listener: asyncio.Task[None] | None = None
        self.runners = [
            ReconcilerRunner(
                database,
                reconciler,
                owner=owner,
                idle_poll_seconds=idle_poll_seconds,
                metrics=self.metrics,
            )
            for reconciler in reconcilers
        ]
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        if not self.database.is_sqlite and self.runners:
            from tenantplane.reconcile.listener import listen

            url = self.database.engine.url.render_as_string(hide_password=False)
            self._listener = asyncio.create_task(listen(url, wakeups.wake), name="reconcile-hints")
        self._tasks = [
            asyncio.create_task(runner.run(), name=f"reconciler:{runner.reconciler.name}")
            for runner in self.runners
        ]

    async def stop(self, grace_seconds: float = 10.0) -> None:
        """Graceful: runners finish the rows in hand; cancelled only after the grace."""
        for runner in self.runners:
            runner.stop()
        if self._listener is not None:
            self._listener.cancel()
            await asyncio.gather(self._listener, return_exceptions=True)
            self._listener = None
        if self._tasks:
            _, late = await asyncio.wait(self._tasks, timeout=grace_seconds + 1)
            for task in late:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        on_stopped, self._on_stopped = self._on_stopped, None
        if on_stopped is not None:
            await on_stopped()

    async def refresh_metrics(self) -> None:
        """Read what metrics show from the database (at scrape time). A database outage
        leaves the last values: a scrape still shows the rest (process, steps, failures)."""
        try:
            for runner in self.runners:
                await runner.refresh_metrics()
        except Exception:
            log.warning("reconciler queue depth not read", exc_info=True)

    async def run_forever(self) -> None:
        self.start()
        try:
            await asyncio.gather(*self._tasks)
        finally:
            await self.stop()
