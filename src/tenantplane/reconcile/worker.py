"""`tenantplane worker`: every reconciler, no API, until SIGINT or SIGTERM; with
``--metrics-port``, Prometheus metrics on ``/metrics`` (the API's are on its own port)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import Callable, Iterator
from dataclasses import replace

import structlog
import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tenantplane.config import Settings
from tenantplane.db.engine import Database, DatabaseOptions
from tenantplane.heap import heap_settled
from tenantplane.http.listen import base_url
from tenantplane.logging import configure_logging
from tenantplane.reconcile.metrics import ReconcileMetrics, register_runtime_collectors
from tenantplane.reconcile.supervisor import Supervisor

log = structlog.get_logger(__name__)


SupervisorFactory = Callable[[Settings, Database, ReconcileMetrics], Supervisor]


def metrics_app(supervisor: Supervisor) -> Starlette:
    async def metrics(_: Request) -> Response:
        await supervisor.refresh_metrics()
        return Response(
            generate_latest(supervisor.metrics.registry), media_type=CONTENT_TYPE_LATEST
        )

    return Starlette(routes=[Route("/metrics", metrics, methods=["GET"])])


class MetricsServer(uvicorn.Server):
    """uvicorn serving the worker's /metrics inside the worker's event loop. The worker
    handles SIGINT and SIGTERM itself: this server takes no signal handlers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def address(self) -> str:
        return base_url(self.servers[0].sockets[0].getsockname())


async def start_metrics_server(
    supervisor: Supervisor, sockets: list[socket.socket]
) -> tuple[MetricsServer, asyncio.Task[None]]:
    """Serves on ``sockets``, bound beforehand (by the command: an address that cannot be
    used is its one-line error, not uvicorn's exit from inside the worker's event loop)."""
    config = uvicorn.Config(
        metrics_app(supervisor), access_log=False, log_config=None, lifespan="off"
    )
    server = MetricsServer(config)
    task = asyncio.create_task(server.serve(sockets=sockets), name="worker-metrics")
    while not server.started:
        if task.done():
            await task
            raise OSError("the metrics server did not start")
        await asyncio.sleep(0.01)
    return server, task


async def run_worker(
    settings: Settings,
    build_supervisor: SupervisorFactory,
    *,
    metrics_sockets: list[socket.socket] | None = None,
    refresh_metrics_seconds: float | None = None,
) -> None:
    """Run what ``build_supervisor`` assembles (the application's reconcilers) until a signal;
    with ``metrics_sockets`` (bound: ``tenantplane.http.listen``), serve metrics on them.
    ``refresh_metrics_seconds``: read the gauges a scrape would refresh (queue depth, rows in
    progress) this often, for metrics rendered by another process (`serve --workers N`)."""
    configure_logging(settings.log_level, settings.log_json)
    database = Database.connect(
        settings.database_url,
        replace(DatabaseOptions.from_settings(settings), keep_overflow_open=True),
    )
    metrics = ReconcileMetrics()
    register_runtime_collectors(metrics.registry)
    supervisor = build_supervisor(settings, database, metrics)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, stop.set)
    server: MetricsServer | None = None
    serving: asyncio.Task[None] | None = None
    if metrics_sockets is not None:
        server, serving = await start_metrics_server(supervisor, metrics_sockets)
    supervisor.start()
    refreshing: asyncio.Task[None] | None = None
    if refresh_metrics_seconds is not None:
        refreshing = asyncio.create_task(
            _refresh_metrics(supervisor, stop, refresh_metrics_seconds), name="worker-gauges"
        )
    log.info(
        "worker started",
        reconcilers=[r.reconciler.name for r in supervisor.runners],
        metrics=server.address() + "/metrics" if server is not None else None,
        **settings.summary(),
    )
    try:
        with heap_settled():
            await stop.wait()
    finally:
        if refreshing is not None:
            refreshing.cancel()
            await asyncio.gather(refreshing, return_exceptions=True)
        await supervisor.stop()
        if server is not None and serving is not None:
            server.should_exit = True
            await serving
        await database.dispose()
        log.info("worker stopped")


async def _refresh_metrics(supervisor: Supervisor, stop: asyncio.Event, seconds: float) -> None:
    while not stop.is_set():
        await supervisor.refresh_metrics()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)


__all__ = ["SupervisorFactory", "run_worker"]
