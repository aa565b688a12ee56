"""A loopback HTTP server that records what Alertmanager's webhook integration posts to it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.server import QuietHandler, serving


@dataclass
class WebhookSink:
    url: str = ""
    # path -> the JSON bodies posted to it, in arrival order
    received: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    arrived: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self.arrived = threading.Condition(self.lock)

    def bodies(self, path: str) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.received.get(path, []))

    def wait_for(self, path: str, timeout: float) -> list[dict[str, Any]]:
        """Block until something reached ``path`` (or the timeout passed); return it all."""
        with self.arrived:
            self.arrived.wait_for(lambda: bool(self.received.get(path)), timeout=timeout)
            return list(self.received.get(path, []))


@contextmanager
def running_webhook_sink() -> Iterator[WebhookSink]:
    sink = WebhookSink()

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            with sink.arrived:
                sink.received.setdefault(self.path, []).append(body)
                sink.arrived.notify_all()
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    with serving(Handler) as server:
        sink.url = server.url
        yield sink
