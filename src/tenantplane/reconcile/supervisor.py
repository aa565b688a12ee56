"""Every reconciler of a process, run until stopped (the app's lifespan, `worker`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from tenantplane.db.engine import Database
from tenantplane.reconcile.hints import wakeups
from tenantplane.reconcile.metrics import ReconcileMetrics
from tenantplane.reconcile.reconciler import Reconciler
from tenantplane.reconcile.runner import ReconcilerRunner, process_identity

log = structlog.get_logger(__name__)


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
