"""A loopback stand-in for Alertmanager's management API that refuses reloads.

Alertmanager answers `POST /-/reload` with 200, or with 500 and the text
"failed to reload config: <reason>" when the new file does not load (it keeps running
the previous configuration). This fake answers the refusal for the first `refusals`
reloads, then accepts, and counts them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tests.fakes.server import LoopbackServer, QuietHandler, serving


@dataclass
class RefusingAlertmanager:
    refusals: int = 1
    reloads: int = 0
    server: LoopbackServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None, "the fake is not running"
        return self.server.url


@contextmanager
def running_refusing_alertmanager(refusals: int = 1) -> Iterator[RefusingAlertmanager]:
    fake = RefusingAlertmanager(refusals=refusals)

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            if self.path != "/-/reload":
                self._answer(404, b"404 page not found\n")
                return
            fake.reloads += 1
            if fake.reloads <= fake.refusals:
                self._answer(500, b"failed to reload config: undefined receiver used in route\n")
            else:
                self._answer(200, b"")

        def _answer(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serving(Handler) as fake.server:
        yield fake
