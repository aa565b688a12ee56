"""What a reconciler is: one kind of asynchronous work on leased rows.

A reconciler turns one leased row into progress in three steps:

1. ``load`` in a short session: read the row and what else is needed into a plain snapshot;
2. ``act`` with no session open: call the outside world (idempotent calls only), holding
   the lease's ``Fence`` before each side effect (reconcile/fence.py);
3. ``apply`` in a new short session: write what was observed through the ``LeaseGuard``
   (0 rows updated = the lease was lost; the result is discarded).

A reconciler may declare ``batched = True``: the rows of one lease fetch are then worked as
one batch (``load_batch`` in one session, the acts concurrently with one heartbeat for them
all, ``apply_batch`` in one session), so that a reconciler whose steps are single statements
reads and writes a whole batch in a statement or two instead of two per row (and, through
``act_batch``, calls an outside world that takes many calls at once in one).

The runner that leases rows and schedules steps is reconcile/runner.py; the steps
themselves run in reconcile/steps.py.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Generic, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.schema import Table

from tenantplane.reconcile.fence import Fence
from tenantplane.reconcile.lease import LeaseGuard

Snapshot = TypeVar("Snapshot")
Outcome = TypeVar("Outcome")


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
    #: and rows are arriving (the last fetch found some, less than ``runner.STREAM_SECONDS`` ago),
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
