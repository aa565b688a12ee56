"""Cross-process wake-up hints on PostgreSQL: LISTEN for the NOTIFY sent by writers.

One dedicated connection per process (outside the pool: it idles in LISTEN for as long as
the process lives), through whichever driver the database URL names. Lost connections are
re-established with a capped backoff; meanwhile the runners' idle poll covers the gap.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog
from sqlalchemy.engine import make_url

from tenantplane.reconcile.hints import NOTIFY_CHANNEL

log = structlog.get_logger(__name__)

Wake = Callable[[str], None]


def _dsn(url: str) -> tuple[str, str]:
    parsed = make_url(url)
    driver = parsed.get_dialect().driver
    plain = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
    return driver, plain


async def _listen_asyncpg(dsn: str, wake: Wake, ready: asyncio.Event) -> None:
    import asyncpg  # type: ignore[import-untyped]

    connection = await asyncpg.connect(dsn)
    closed = asyncio.Event()
    connection.add_termination_listener(lambda _: closed.set())
    try:
        await connection.add_listener(
            NOTIFY_CHANNEL, lambda _conn, _pid, _channel, payload: wake(str(payload))
        )
        ready.set()
        await closed.wait()
    finally:
        await connection.close()


async def _listen_psycopg(dsn: str, wake: Wake, ready: asyncio.Event) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as connection:
        await connection.execute(f"LISTEN {NOTIFY_CHANNEL}")
        ready.set()
        async for notification in connection.notifies():
            wake(notification.payload)


async def listen(url: str, wake: Wake, ready: asyncio.Event | None = None) -> None:
    """Call ``wake(name)`` for every hint from any process, until cancelled."""
    driver, dsn = _dsn(url)
    listener = _listen_asyncpg if driver == "asyncpg" else _listen_psycopg
    ready = ready or asyncio.Event()
    delay = 0.5
    while True:
        try:
            await listener(dsn, wake, ready)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("reconcile hint listener lost its connection; retrying", exc_info=True)
        ready.clear()
        await asyncio.sleep(delay)
        delay = min(delay * 2, 30.0)
