"""Running the steps of leased rows: one row (``work``) or the rows of one fetch together
(``work_batch``), with what a step needs around it: sessions of the right kind, the fence
held before side effects, a heartbeat while ``act`` runs, and a back-off after a failure.

The runner (reconcile/runner.py) decides which rows to lease and when; this only works them.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession
from structlog.typing import FilteringBoundLogger

from tenantplane.db.engine import Database
from tenantplane.reconcile.fence import Fence, LeaseLost
from tenantplane.reconcile.fetcher import Fetcher
from tenantplane.reconcile.heartbeat import batch_heartbeat, heartbeat
from tenantplane.reconcile.lease import Lease
from tenantplane.reconcile.metrics import ReconcileMetrics
from tenantplane.reconcile.reconciler import Reconciler


class Steps:
    """Works leased rows of one reconciler."""

    def __init__(
        self,
        database: Database,
        reconciler: Reconciler[Any, Any],
        fetcher: Fetcher,
        metrics: ReconcileMetrics,
        log: FilteringBoundLogger,
    ) -> None:
        self.database = database
        self.reconciler = reconciler
        self.fetcher = fetcher
        self.metrics = metrics
        self._log = log

    async def work(self, lease: Lease) -> None:
        with self.metrics.step(self.reconciler.name):
            await self._step(lease)

    async def work_batch(self, leases: list[Lease]) -> None:
        started = time.perf_counter()
        try:
            await self._step_batch(leases)
        finally:
            self.metrics.steps_done(self.reconciler.name, len(leases), started)

    async def failed(
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

    async def _step(self, lease: Lease) -> None:
        reconciler = self.reconciler
        try:
            async with self._loads() as session:
                snapshot = await reconciler.load(session, lease.row_id)
                if snapshot is None:
                    await lease.guard(session).update(reconcile_at=None)
                    return
            async with heartbeat(self.fetcher, lease, reconciler.lease_seconds, self._log) as held:
                outcome = await reconciler.act(snapshot, self._fence(lease))
            if not held.is_set():
                # Taken over (or the row deleted) while we worked: the result is stale.
                self._log.warning("lease lost during the step", row_id=lease.row_id)
                return
            async with self._applies() as session:
                await reconciler.apply(session, lease.guard(session), snapshot, outcome)
        except asyncio.CancelledError:
            raise
        except LeaseLost:
            self._lost(lease)
        except Exception:
            self.metrics.failures.labels(reconciler.name).inc()
            self._log.exception("reconcile step failed", row_id=lease.row_id)
            await self._back_off(lease)

    async def _step_batch(self, leases: list[Lease]) -> None:
        """``_step`` for the rows of one fetch together (``Reconciler.batched``)."""
        reconciler = self.reconciler
        if reconciler.acts_in_apply:
            await self._act_and_apply(leases)
            return
        try:
            async with self._loads() as session:
                snapshots = await reconciler.load_batch(session, [lease.row_id for lease in leases])
                for lease in leases:
                    if snapshots.get(lease.row_id) is None:
                        await lease.guard(session).update(reconcile_at=None)
        except asyncio.CancelledError:
            raise
        except Exception:
            await self.failed(leases, "reconcile step failed")
            return
        working = [lease for lease in leases if snapshots.get(lease.row_id) is not None]
        if not working:
            return
        async with batch_heartbeat(
            self.fetcher, working, reconciler.lease_seconds, self._log
        ) as held:
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
                await self.failed([lease], "reconcile step failed", result)
            elif lease.row_id not in held:
                # Taken over (or the row deleted) while we worked: the result is stale.
                self._log.warning("lease lost during the step", row_id=lease.row_id)
            else:
                batch.append((lease, snapshots[lease.row_id], result))
        if batch:
            await self._apply_batch(batch)

    async def _apply_batch(self, batch: list[tuple[Lease, Any, Any]]) -> None:
        try:
            async with self._applies() as session:
                await self.reconciler.apply_batch(
                    session,
                    [
                        (lease.guard(session), snapshot, outcome)
                        for lease, snapshot, outcome in batch
                    ],
                )
        except asyncio.CancelledError:
            raise
        except Exception:
            await self.failed([lease for lease, _, _ in batch], "reconcile step failed")

    async def _act_and_apply(self, leases: list[Lease]) -> None:
        """``_step_batch`` for a reconciler that ``acts_in_apply``: no heartbeat (the
        transaction is a few statements long), no stale outcome (the reconciler reads, and
        acts for, only the rows it finds still held, locked, in that transaction)."""
        try:
            async with self._applies() as session:
                await self.reconciler.act_and_apply_batch(
                    session, [lease.guard(session) for lease in leases]
                )
        except asyncio.CancelledError:
            raise
        except Exception:
            await self.failed(leases, "reconcile step failed")

    def _applies(self) -> contextlib.AbstractAsyncContextManager[AsyncSession]:
        """The session a step's ``apply`` runs in."""
        database = self.database
        if self.reconciler.single_statements:
            return database.statements()
        return database.transaction()

    def _loads(self) -> contextlib.AbstractAsyncContextManager[AsyncSession]:
        """The session a step's ``load`` runs in."""
        if self.reconciler.load_in_one_statement:
            return self.database.statements()
        return self._applies()

    def _fence(self, lease: Lease) -> Fence:
        return Fence(self.database, lease, timedelta(seconds=self.reconciler.lease_seconds))

    def _lost(self, lease: Lease) -> None:
        """An act stopped before a side effect: its lease had lapsed or was taken over, or
        the row is gone. Nothing to back off: the row is whoever holds it now's."""
        self._log.warning("lease lost before a side effect; the step stopped", row_id=lease.row_id)

    async def _back_off(self, lease: Lease) -> None:
        with contextlib.suppress(Exception):
            async with self.database.transaction() as session:
                await lease.guard(session).retry_in(self.reconciler.error_backoff_seconds)
