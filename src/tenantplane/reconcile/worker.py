"""`tenantplane worker`: every reconciler, no HTTP, until SIGINT or SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import signal

import structlog

from tenantplane.config import Settings
from tenantplane.db.engine import Database
from tenantplane.logging import configure_logging
from tenantplane.reconcile.registry import build_supervisor

log = structlog.get_logger(__name__)


async def run_worker(settings: Settings) -> None:
    configure_logging(settings.log_level, settings.log_json)
    database = Database.connect(settings.database_url)
    supervisor = build_supervisor(settings, database)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, stop.set)
    supervisor.start()
    log.info("worker started", reconcilers=[r.reconciler.name for r in supervisor.runners])
    try:
        await stop.wait()
    finally:
        await supervisor.stop()
        await database.dispose()
        log.info("worker stopped")
