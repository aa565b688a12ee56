"""`tenantplane serve --workers N`: N processes serving the API on the port the command
bound, each on sockets of its own (SO_REUSEPORT: the kernel spreads new connections over
them, http/listen.py), the reconcilers in one process of their own, all stopped together.

uvicorn's supervisor (``uvicorn.supervisors.Multiprocess``) starts the API processes from
this one, replaces one that dies or stops answering its health checks, and on SIGTERM or
SIGINT stops them all, each after the requests it has begun (uvicorn's graceful shutdown);
this process then exits 0. The API processes run no reconcilers: `tenantplane worker`'s
``run_worker`` runs them in one more process, which this supervisor starts, restarts and
stops beside them (none when TENANTPLANE_RUN_RECONCILERS is false: `tenantplane worker`
processes run them). So the leases, the SQLite in-memory locks and the start-up log event of
the reconcilers are those of one process per serve, as with one process.

Every process writes its metrics to a directory of the serve, and the API process that
answers /metrics reads them all (``tenantplane.metrics``). What each process keeps for
itself: its API-key cache (a revoked key is refused by every process within
TENANTPLANE_API_KEY_CACHE_SECONDS, at most 1 s, as by every replica) and, without Redis, its
rate-limit and authentication-failure counts (each process allows the whole budget: N times
the limit).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import multiprocessing
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator
from multiprocessing.context import SpawnProcess
from typing import Any

import structlog
from fastapi import FastAPI
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess
from uvicorn.supervisors.multiprocess import Process

from tenantplane.app import serving_app
from tenantplane.config import Settings
from tenantplane.heap import heap_settled
from tenantplane.http.listen import base_url, reuse_port_groups
from tenantplane.metrics import shared_metrics_directory
from tenantplane.server import serve_config

log = structlog.get_logger(__name__)

# A process busy with requests answers the supervisor's health check late on a loaded
# machine; only one silent this long is taken for hung (replaced).
HEALTH_CHECK_SECONDS = 30
# The reconcilers process is started again at most this often (one that fails at once).
RECONCILERS_RESTART_SECONDS = 5.0
# How often the reconcilers process reads the gauges a scrape would refresh.
RECONCILER_GAUGES_SECONDS = 5.0
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """The kernel kills this process when the serve's supervisor dies (SIGKILL, the OOM
    killer): nothing would stop it afterwards, and it would go on holding the port."""
    if sys.platform != "linux":
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))
    if os.getppid() != parent:
        os._exit(1)  # it died before the request above took effect


def worker_app(settings: Settings, parent: int) -> FastAPI:
    """The application of one API process, made in that process: the app, plus what
    ``LoggedServer`` does for the process of a one-process serve (the supervisor logs the
    serve's start and end): its heap settled while it serves (``heap_settled``)."""
    die_with_parent(parent)
    app = serving_app(settings)
    lifespan = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def serving(app: FastAPI) -> AsyncIterator[Any]:
        async with lifespan(app) as state:
            with heap_settled():
                yield state

    app.router.lifespan_context = serving
    return app


def run_reconcilers(settings: Settings, parent: int) -> None:
    """The reconcilers process: `tenantplane worker` without its own /metrics port."""
    die_with_parent(parent)
    from tenantplane.reconcile.worker import run_worker
    from tenantplane.reconcilers import build_supervisor

    asyncio.run(
        run_worker(settings, build_supervisor, refresh_metrics_seconds=RECONCILER_GAUGES_SECONDS)
    )


class ServeSupervisor(Multiprocess):
    """uvicorn's supervisor of the API processes, which also keeps the reconcilers process
    (when ``settings.run_reconcilers``) and logs `server started` once every API process
    serves."""

    def __init__(
        self, config: Any, groups: list[list[socket.socket]], settings: Settings, address: str
    ) -> None:
        super().__init__(config, groups[0])
        # The sockets of each API process, by its place in ``processes``: a replacement
        # takes over its predecessor's (they stay open here, listening, in between: the
        # connections the kernel hands them wait for it).
        self.groups = groups
        self.settings = settings
        self.address = address
        self.reconcilers: SpawnProcess | None = None
        self._reconcilers_started = 0.0
        self._announced = False

    def _start_reconcilers(self) -> None:
        spawn = multiprocessing.get_context("spawn")
        self.reconcilers = spawn.Process(
            target=run_reconcilers,
            args=(self.settings, os.getpid()),
            name="tenantplane-reconcilers",
        )
        self.reconcilers.start()
        self._reconcilers_started = time.monotonic()

    def init_processes(self) -> None:
        if self.settings.run_reconcilers:
            self._start_reconcilers()
        for group in self.groups:
            process = Process(self.config, group)
            process.start()
            self.processes.append(process)

    def _replace(self, index: int) -> None:
        """uvicorn's replacement of a dead or hung API process, on its sockets."""
        process = self.processes[index]
        process.kill()
        process.join()
        if process.exitcode == STARTUP_FAILURE:
            # It failed before serving (the app, the database): so would every restart.
            log.error("API process failed to start; stopping", pid=process.pid)
            self.should_exit.set()
            return
        if self.should_exit.is_set():
            return
        log.error("API process ended; starting another", pid=process.pid)
        replacement = Process(self.config, self.groups[index])
        replacement.start()
        self.processes[index] = replacement

    def restart_all(self) -> None:
        """SIGHUP: each API process replaced in turn, the new one serving on its sockets
        before the old one stops."""
        for index, old in enumerate(self.processes):
            if self.should_exit.is_set():
                return
            new = Process(self.config, self.groups[index])
            new.start()
            if not new.wait_until_ready(self.config.timeout_worker_healthcheck, self.should_exit):
                new.kill()
                new.join()
                log.error("new API process not ready; restart abandoned", pid=new.pid)
                return
            old.terminate()
            old.join()
            self.processes[index] = new

    def handle_ttin(self) -> None:
        # One process per socket set: their number is --workers, not changed by signals.
        log.warning("SIGTTIN ignored: the number of API processes is --workers")

    def handle_ttou(self) -> None:
        log.warning("SIGTTOU ignored: the number of API processes is --workers")

    def _announce_once_ready(self) -> None:
        if self._announced or self.should_exit.is_set():
            return
        if not all(process.is_ready(timeout=1) for process in self.processes):
            return
        self._announced = True
        log.info(
            "server started",
            address=self.address,
            workers=[process.pid for process in self.processes],
            reconcilers=self.reconcilers.pid if self.reconcilers is not None else None,
            **self.settings.summary(),
        )

    def keep_subprocess_alive(self) -> None:
        """An API process that died or hangs is replaced (on its sockets), then the
        reconcilers process, and the start announced once every API process serves."""
        if self.should_exit.is_set():
            return
        for index, process in enumerate(self.processes):
            if not process.is_alive(timeout=self.config.timeout_worker_healthcheck):
                self._replace(index)
                if self.should_exit.is_set():
                    return
        self._announce_once_ready()
        reconcilers = self.reconcilers
        if self.should_exit.is_set() or reconcilers is None or reconcilers.is_alive():
            return
        if time.monotonic() - self._reconcilers_started < RECONCILERS_RESTART_SECONDS:
            return
        log.error("reconcilers process ended; starting another", exit_code=reconcilers.exitcode)
        self._start_reconcilers()

    def terminate_all(self) -> None:
        super().terminate_all()
        if self.reconcilers is not None and self.reconcilers.is_alive():
            # SIGTERM: its runners finish the rows in hand and give their leases up.
            self.reconcilers.terminate()

    def join_all(self) -> None:
        super().join_all()
        if self.reconcilers is not None:
            self.reconcilers.join()

    @property
    def failed_to_start(self) -> bool:
        return any(process.exitcode == STARTUP_FAILURE for process in self.processes)


def serve_workers(
    settings: Settings, host: str, port: int, sockets: list[socket.socket], workers: int
) -> int:
    """Serve with ``workers`` API processes until SIGTERM or SIGINT; the exit status (3 when
    an API process could not start, as uvicorn's)."""
    if not settings.redis_url:
        log.warning(
            "rate limits are counted per process",
            workers=workers,
            effect=f"each client may make {workers} times TENANTPLANE_RATE_LIMIT, and fail to "
            f"authenticate {workers} times TENANTPLANE_AUTH_FAILURE_THRESHOLD before its backoff",
            remedy="set TENANTPLANE_REDIS_URL to share one budget",
        )
    api_settings = settings.model_copy(update={"run_reconcilers": False})
    config = serve_config(
        settings,
        host,
        port,
        functools.partial(worker_app, api_settings, os.getpid()),
        factory=True,
        workers=workers,
        timeout_worker_healthcheck=HEALTH_CHECK_SECONDS,
    )
    address = base_url(sockets[0].getsockname())
    groups = reuse_port_groups(sockets, workers)
    try:
        with shared_metrics_directory(settings.data_dir):
            supervisor = ServeSupervisor(config, groups, settings, address)
            supervisor.run()
    finally:
        for group in groups:
            for sock in group:
                sock.close()
    log.info("server stopped")
    return STARTUP_FAILURE if supervisor.failed_to_start else 0
