"""`tenantplane serve`: uvicorn serving the app; its start-up and shutdown are log events.

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
import signal
import socket
import threading
from collections.abc import Iterator
from typing import Any

import h11
import structlog
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import HANDLED_SIGNALS

from tenantplane.app import create_app
from tenantplane.config import Settings
from tenantplane.heap import heap_settled

log = structlog.get_logger(__name__)


class HeadTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request head."""

    head_timeout_seconds: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
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


def protocol_with_head_timeout(seconds: float) -> type[HeadTimeoutProtocol]:
    class Configured(HeadTimeoutProtocol):
        head_timeout_seconds = seconds

    return Configured


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
        host, port = self.servers[0].sockets[0].getsockname()[:2]
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve(settings: Settings, host: str, port: int, sockets: list[socket.socket]) -> None:
    """Serve on ``sockets``, bound beforehand to ``host`` and ``port`` (``bind_listeners``)."""
    server_for(settings, host, port).run(sockets=sockets)


def server_for(settings: Settings, host: str, port: int) -> LoggedServer:
    """The server of `tenantplane serve`, not yet started."""
    config = uvicorn.Config(
        create_app(settings),
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
        http=protocol_with_head_timeout(settings.request_head_timeout_seconds),
    )
    return LoggedServer(config, settings)
