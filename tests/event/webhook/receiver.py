"""A real HTTP receiver of webhooks on loopback: it records every request as it arrived
(headers and the body's bytes, for the signature check) and answers what a test scripted
(200 unless told otherwise)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from standardwebhooks import Webhook

from tests.fakes.server import QuietHandler, serving

WAIT_SECONDS = 60.0


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def message(self) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.body)
        return found

    @property
    def type(self) -> str:
        return str(self.message["type"])

    @property
    def id(self) -> str:
        return self.headers["webhook-id"]

    def verified(self, secret: str) -> dict[str, Any]:
        """The payload, once the signature verified with ``secret`` (the specification's own
        library, as a receiver would check it); raises WebhookVerificationError otherwise."""
        found: dict[str, Any] = Webhook(secret).verify(self.body, self.headers)
        return found


@dataclass
class Receiver:
    url: str = ""
    requests: list[Received] = field(default_factory=list)
    # path -> statuses to answer, in order, to the next requests there (then 200)
    scripts: dict[str, list[int]] = field(default_factory=dict)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def answer(self, path: str, *statuses: int) -> None:
        with self.changed:
            self.scripts.setdefault(path, []).extend(statuses)

    def at(self, path: str) -> list[Received]:
        with self.changed:
            return [request for request in self.requests if request.path == path]

    async def wait_for(
        self, path: str, until: Callable[[list[Received]], bool], what: str
    ) -> list[Received]:
        """The requests to ``path`` once ``until`` holds for them (a deadline only turns a
        hang into a failure)."""

        def wait() -> tuple[bool, list[Received]]:
            with self.changed:
                done = self.changed.wait_for(lambda: until(self._at(path)), WAIT_SECONDS)
                return done, self._at(path)

        done, found = await asyncio.to_thread(wait)
        if not done:
            pytest.fail(f"gave up waiting for {what}; received {[r.type for r in found]}")
        return found

    def _at(self, path: str) -> list[Received]:
        return [request for request in self.requests if request.path == path]

    def _record(self, request: Received) -> int:
        with self.changed:
            self.requests.append(request)
            self.changed.notify_all()
            script = self.scripts.get(request.path)
            return script.pop(0) if script else 200


@contextmanager
def running_receiver() -> Iterator[Receiver]:
    receiver = Receiver()

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            headers = {name.lower(): value for name, value in self.headers.items()}
            status = receiver._record(Received(self.path, headers, body))
            self.send_response(status)
            if 300 <= status < 400:
                self.send_header("Location", f"{receiver.url}/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()

    with serving(Handler) as server:
        receiver.url = server.url
        yield receiver
