"""Heartbeats: a step's leases renewed while its ``act`` runs.

Every third of the lease's duration the lease is renewed (dstack's ``Heartbeater``), so a
slow step keeps its row; a renewal that finds the lease lost tells the step, whose result is
then not applied. A renewal that fails (the database busy or away) is tried again at the
next beat: the lease stays valid until its last renewal's expiry.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from structlog.typing import FilteringBoundLogger

from tenantplane.reconcile.fetcher import Fetcher
from tenantplane.reconcile.lease import Lease


@contextlib.asynccontextmanager
async def heartbeat(
    fetcher: Fetcher, lease: Lease, lease_seconds: float, log: FilteringBoundLogger
) -> AsyncIterator[asyncio.Event]:
    """Renew ``lease`` every third of its duration while the block runs; the event
    yielded is cleared once a renewal finds the lease lost."""
    held = asyncio.Event()
    held.set()
    duration = timedelta(seconds=lease_seconds)

    async def beat() -> None:
        while True:
            # A timer, not synchronisation: renewals are due at fixed intervals.
            await asyncio.sleep(lease_seconds / 3)
            try:
                renewed = await fetcher.renew(lease, duration)
            except Exception:
                log.warning("lease renewal failed", row_id=lease.row_id, exc_info=True)
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


@contextlib.asynccontextmanager
async def batch_heartbeat(
    fetcher: Fetcher, leases: list[Lease], lease_seconds: float, log: FilteringBoundLogger
) -> AsyncIterator[set[Any]]:
    """``heartbeat`` for the rows of a batch: every third of the lease, one statement
    renews all their leases. Yields the keys of the rows still held (a renewal that
    misses a row removes it). No task exists unless the block outlasts a third of the
    lease: a timer starts the beats."""
    held = {lease.row_id for lease in leases}
    interval = lease_seconds / 3
    duration = timedelta(seconds=lease_seconds)
    beating: list[asyncio.Task[None]] = []

    async def beat() -> None:
        while True:
            mine = [lease for lease in leases if lease.row_id in held]
            try:
                renewed = await fetcher.renew_many(mine, duration)
            except Exception:
                log.warning("lease renewal failed", rows=len(mine), exc_info=True)
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
