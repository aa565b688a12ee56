"""Cross-process wake-up hints on PostgreSQL: LISTEN for the NOTIFY sent by writers.

One dedicated connection per process (outside the pool: it idles in LISTEN for as long as
the process lives), through psycopg 3, the one PostgreSQL driver. Lost connections are
re-established with a capped backoff; meanwhile the runners' idle poll covers the gap.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from tenantplane.db.urls import libpq_dsn
from tenantplane.reconcile.hints import NOTIFY_CHANNEL

log = structlog.get_logger(__name__)

Wake = Callable[[str], None]


async def _listen_psycopg(dsn: str, wake: Wake, ready: asyncio.Event) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as connection:
        await connection.execute(f"LISTEN {NOTIFY_CHANNEL}")
        ready.set()
        async for notification in connection.notifies():
            wake(notification.payload)


async def listen(url: str, wake: Wake, ready: asyncio.Event | None = None) -> None:
    """Call ``wake(name)`` for every hint from any process, until cancelled."""
    dsn = libpq_dsn(url)
    ready = ready or asyncio.Event()
    delay = 0.5
    while True:
        try:
            await _listen_psycopg(dsn, wake, ready)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("reconcile hint listener lost its connection; retrying", exc_info=True)
        ready.clear()
        await asyncio.sleep(delay)
        delay = min(delay * 2, 30.0)
