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
        # The connection does nothing else from now on: rather than psycopg's
        # ``notifies()``, which registers the socket with the event loop and unregisters it
        # again for every notification, one reader for as long as the connection lives
        # reads whatever has arrived and hands over every notification in it.
        pgconn = connection.pgconn
        loop = asyncio.get_running_loop()
        lost: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            try:
                pgconn.consume_input()
                while (notification := pgconn.notifies()) is not None:
                    wake(notification.extra.decode())
            except Exception as exc:  # the connection is gone (psycopg.OperationalError)
                if not lost.done():
                    lost.set_exception(exc)

        socket = pgconn.socket
        loop.add_reader(socket, readable)
        try:
            ready.set()
            readable()  # what arrived with the LISTEN's answer
            await lost
        finally:
            loop.remove_reader(socket)


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
