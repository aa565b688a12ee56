"""A loopback stand-in for Alertmanager's management API that refuses reloads.

Alertmanager answers `POST /-/reload` with 200, or with 500 and the text
"failed to reload config: <reason>" when the new file does not load (it keeps running
the previous configuration). This fake answers the refusal for the first `refusals`
reloads, then accepts, and counts them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class RefusingAlertmanager:
    refusals: int = 1
    reloads: int = 0
    url: str = ""


@contextmanager
def running_refusing_alertmanager(refusals: int = 1) -> Iterator[RefusingAlertmanager]:
    fake = RefusingAlertmanager(refusals=refusals)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            if self.path != "/-/reload":
                self.send_response(404)
                self.end_headers()
                return
            fake.reloads += 1
            if fake.reloads <= fake.refusals:
                body = b"failed to reload config: undefined receiver used in route\n"
                self.send_response(500)
            else:
                body = b""
                self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
