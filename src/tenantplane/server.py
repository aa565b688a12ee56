"""`tenantplane serve`: uvicorn serving the app; its start-up and shutdown are log events.
With more than one process (``--workers``), ``tenantplane.server_workers`` supervises them.

SIGTERM and SIGINT start uvicorn's graceful shutdown, after which the process exits 0: the
stop was asked for and went as it should. (uvicorn raises the signal again once shut down,
so that the process died of it: `make serve` then ended with "Error 143".)

uvicorn closes idle keep-alive connections but waits without limit for a request head that
has begun to arrive (or that never does): a client can hold connections open by sending a
few bytes and nothing more. ``HeadTimeoutProtocol`` closes a connection whose request head
is not complete ``TENANTPLANE_REQUEST_HEAD_TIMEOUT_SECONDS`` after the connection opened or
after its previous response.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h11
import structlog
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import HANDLED_SIGNALS

from tenantplane.app import serving_app
from tenantplane.config import Settings
from tenantplane.heap import heap_settled
from tenantplane.http.listen import base_url

log = structlog.get_logger(__name__)


class ServeConfig(uvicorn.Config):
    """uvicorn's configuration with the request head deadline, which ``HeadTimeoutProtocol``
    reads from it: the configuration is what reaches each process of `serve --workers N`."""

    def __init__(self, app: Any, *, head_timeout_seconds: float, **options: Any) -> None:
        super().__init__(app, **options)
        self.head_timeout_seconds = head_timeout_seconds


class HeadTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request head."""

    head_timeout_seconds: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if isinstance(self.config, ServeConfig):
            self.head_timeout_seconds = self.config.head_timeout_seconds
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # The next request's head, if any, has its own deadline.
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        super().connection_lost(exc)

    def _arm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        # A new head parsed in time replaces ``cycle``: the deadline is then met.
        waiting_after = self.cycle
        self._head_timer = self.loop.call_later(
            self.head_timeout_seconds, self._head_timed_out, waiting_after
        )

    def _head_timed_out(self, waiting_after: object) -> None:
        self._head_timer = None
        if self.cycle is not waiting_after or self.transport.is_closing():
            return
        log.debug("request head timeout; connection closed", client=self.client)
        # Mid-message on our side, h11 refuses: closing the transport is all there is to do.
        with contextlib.suppress(h11.LocalProtocolError):
            self.conn.send(h11.ConnectionClosed())
        self.transport.close()


class LoggedServer(uvicorn.Server):
    """uvicorn's server, announcing the address it is bound to (the real port when asked for
    port 0) and what it serves with once the app has started, and its own end."""

    def __init__(self, config: uvicorn.Config, settings: Settings) -> None:
        super().__init__(config)
        self.settings = settings
        self._settled = contextlib.ExitStack()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """As uvicorn's, without raising the signal again after the graceful shutdown."""
        # Signal handlers can only be set from the main thread (the tests serve from others).
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {signum: signal.signal(signum, self.handle_exit) for signum in HANDLED_SIGNALS}
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            # The app is warm (its lifespan has run): the process serves from now on.
            self._settled.enter_context(heap_settled())
            log.info("server started", address=self.address(), **self.settings.summary())

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._settled.close()
        await super().shutdown(sockets)
        log.info("server stopped")

    def address(self) -> str:
        return base_url(self.servers[0].sockets[0].getsockname())


def usable_cores(proc: Path = Path("/proc"), cgroups: Path = Path("/sys/fs/cgroup")) -> int:
    """The cores this process may run on: its CPU affinity, bounded by the CPU limit of its
    cgroup (a container's, which the affinity does not show: a pod limited to 2 CPUs on a
    64-core node would otherwise start 64 processes)."""
    cores = len(os.sched_getaffinity(0))
    try:
        cgroup = next(
            line[3:]
            for line in (proc / "self" / "cgroup").read_text().splitlines()
            if line.startswith("0::")
        )
        quota, period = (cgroups / cgroup.lstrip("/") / "cpu.max").read_text().split()
    except (OSError, StopIteration, ValueError):
        return cores  # no cgroup v2 CPU controller here
    if quota == "max":
        return cores
    return max(1, min(cores, math.ceil(int(quota) / int(period))))


def default_workers(settings: Settings) -> int:
    """PostgreSQL: a process per usable core. SQLite: one, as it takes one writer at a time
    (docs/operations.md, "Processes of a serve")."""
    return 1 if settings.is_sqlite else usable_cores()


def serve(
    settings: Settings,
    host: str,
    port: int,
    sockets: list[socket.socket],
    workers: int | None = None,
) -> int:
    """Serve on ``sockets``, bound beforehand to ``host`` and ``port`` (``bind_listeners``),
    with ``workers`` processes (``default_workers`` when None); the exit status."""
    count = default_workers(settings) if workers is None else workers
    if count == 1:
        server_for(settings, host, port).run(sockets=sockets)
        return 0
    from tenantplane.server_workers import serve_workers

    return serve_workers(settings, host, port, sockets, count)


def serve_config(settings: Settings, host: str, port: int, app: Any, **options: Any) -> ServeConfig:
    """How every process of `serve` runs uvicorn: ``app`` (or, with ``factory=True``, what
    makes it in each process)."""
    return ServeConfig(
        app,
        host=host,
        port=port,
        # Forwarded headers are honoured by the app itself, from TRUSTED_PROXIES only.
        proxy_headers=False,
        # The app logs one `request` event per request (route, request id, duration):
        # uvicorn's own access line would say the same thing again.
        access_log=False,
        # No handlers of uvicorn's own: its records reach the root logger's JSON handler.
        log_config=None,
        # Responses do not advertise the server software.
        server_header=False,
        http=HeadTimeoutProtocol,
        head_timeout_seconds=settings.request_head_timeout_seconds,
        **options,
    )


def server_for(settings: Settings, host: str, port: int) -> LoggedServer:
    """The server of `tenantplane serve` with one process, not yet started."""
    return LoggedServer(serve_config(settings, host, port, serving_app(settings)), settings)
