"""A loopback proxy in front of a real server that misbehaves on cue: it answers a scripted
error instead of forwarding, or forwards and then drops the connection without an answer
(the request succeeded server-side, the client never heard)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


@dataclass(frozen=True)
class Fault:
    """What to do with the next request matching ``method`` (any when None)."""

    status: int = 0  # answer this instead of forwarding; 0 = forward
    headers: dict[str, str] = field(default_factory=dict)
    code: str = "INJECTED"
    drop_after_forward: bool = False
    method: str | None = None


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    status: int | None  # what the client got (None: dropped)
    upstream_headers: dict[str, str]


class Proxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.faults: list[Fault] = []
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.http = httpx.Client(base_url=upstream, timeout=30)

    def inject(self, *faults: Fault) -> None:
        with self.lock:
            self.faults.extend(faults)

    def take(self, method: str) -> Fault | None:
        with self.lock:
            for index, fault in enumerate(self.faults):
                if fault.method in (None, method):
                    return self.faults.pop(index)
        return None

    def record(self, seen: Seen) -> None:
        with self.lock:
            self.seen.append(seen)


def _handler(proxy: Proxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, message: str, *args: object) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            fault = proxy.take(self.command) or Fault()
            if fault.status:
                envelope = {"error": "injected", "code": fault.code, "message": "injected"}
                # Recorded before the answer: the client may look at ``seen`` as soon as
                # it has the answer.
                proxy.record(Seen(self.command, self.path, headers, fault.status, {}))
                self._answer(fault.status, {**fault.headers}, json.dumps(envelope).encode())
                return
            upstream = proxy.http.request(self.command, self.path, content=body, headers=headers)
            upstream_headers = dict(upstream.headers)
            if fault.drop_after_forward:
                proxy.record(Seen(self.command, self.path, headers, None, upstream_headers))
                self.close_connection = True
                self.connection.close()
                return
            proxy.record(
                Seen(self.command, self.path, headers, upstream.status_code, upstream_headers)
            )
            passed = {k: v for k, v in upstream.headers.items() if k.lower() not in HOP_BY_HOP}
            self._answer(upstream.status_code, passed, upstream.content)

        def _answer(self, status: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", headers.get("content-type", "application/json"))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    return Handler


@contextmanager
def serve(upstream: str) -> Iterator[tuple[Proxy, str]]:
    proxy = Proxy(upstream)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(proxy))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        proxy.http.close()
