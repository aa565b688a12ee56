"""What every loopback fake shares: a quiet HTTP/1.1 handler and a server that counts connections.

The fakes speak HTTP/1.1 with keep-alive, as the services they stand in for do, so a client
that pools its connections is seen to reuse them. ``LoopbackServer`` records every accepted
connection by the client's port and notices when the client closes it: tests assert how
many connections a backend opened, and that shutting the application down closed them.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Long enough for a loaded machine; only reached when the awaited event never happens.
WAIT_SECONDS = 10.0


@dataclass
class Hold:
    """The answer to a call held back (after the call took effect, where it has one): as a
    network, or a client frozen before it reads it, would lose it. ``reached`` is set once
    the call waits; ``release`` lets the answer go (to whoever still listens); ``answered``
    is set once the answer is written (or the client was gone)."""

    method: str
    prefix: str
    timeout: float = 300.0
    reached: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)
    answered: threading.Event = field(default_factory=threading.Event)

    def matches(self, method: str, path: str) -> bool:
        return self.method == method and path.startswith(self.prefix)

    def release(self) -> None:
        self.released.set()

    def wait(self) -> None:
        """Called by the fake's handler thread: wait here until released."""
        self.reached.set()
        self.released.wait(self.timeout)


class Holds:
    """A fake's pending holds, each taken by the first call it matches."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[Hold] = []

    def add(self, method: str, prefix: str, timeout: float) -> Hold:
        hold = Hold(method, prefix, timeout)
        with self._lock:
            self._pending.append(hold)
        return hold

    def take(self, method: str, path: str) -> Hold | None:
        with self._lock:
            hold = next((h for h in self._pending if h.matches(method, path)), None)
            if hold is not None:
                self._pending.remove(hold)
        return hold


class QuietHandler(BaseHTTPRequestHandler):
    """Keep-alive (every answer must carry Content-Length) and no access log on stderr."""

    protocol_version = "HTTP/1.1"

    def log_message(self, message_format: str, /, *args: Any) -> None:
        return


class LoopbackServer(ThreadingHTTPServer):
    """A threaded server on 127.0.0.1 that knows which client connections it has seen."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self._peers: list[int] = []
        self._open: set[socket.socket] = set()
        self._changed = threading.Condition()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    @property
    def connections(self) -> int:
        """Connections accepted so far (distinct client ports)."""
        with self._changed:
            return len(set(self._peers))

    @property
    def open_connections(self) -> int:
        with self._changed:
            return len(self._open)

    def wait_until_closed(self) -> bool:
        """True once the clients have closed every connection (False after the deadline)."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._open, timeout=WAIT_SECONDS)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._changed:
            self._peers.append(client_address[1])
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        # Called once the handler has seen the client close the connection (or failed).
        super().shutdown_request(request)
        with self._changed:
            self._open.discard(request)
            self._changed.notify_all()


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[LoopbackServer]:
    """Serve ``handler`` on a free loopback port until the block ends."""
    server = LoopbackServer(handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=WAIT_SECONDS)


@contextmanager
def serving_asgi(app: Any, name: str, **options: Any) -> Iterator[tuple[str, Any]]:
    """Serve an ASGI ``app`` on a free loopback port in a thread; yields (address, server).

    h11, not httptools: some services' clients send methods httptools refuses (Vault's LIST).
    """
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, http="h11", lifespan="off", log_level="warning", access_log=False, **options
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the fake {name} did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
