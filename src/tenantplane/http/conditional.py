"""Conditional GET: If-None-Match naming the current ETag answers 304 Not Modified.

One middleware for every read, so that a route that sends an ETag is conditional without
doing anything (RFC 9110 §13.1.2, §13.2.2):

- only GET and HEAD, and only an answer that would be 200 and carries an ETag: errors, and
  reads without a validator, ignore the header (there is nothing to compare with);
- ``*`` matches any current representation; otherwise the header is a comma-separated list
  of entity tags, compared weakly (``W/"3"`` matches ``"3"``); a bare ``3`` names ``"3"``,
  as If-Match accepts it (docs/api.md#conditional-get);
- the 304 keeps the headers of the 200 but those describing its body (Content-Type,
  Content-Length), and has no body.

The route still runs: its ETag is only known once it has read the resource, and reads are
cheap next to the bytes a 304 saves the client.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tenantplane.http.etag import entity_tags

CONDITIONAL_METHODS = frozenset({"GET", "HEAD"})
# Headers that describe the body a 304 does not have.
BODY_HEADERS = frozenset({b"content-type", b"content-length"})


def matches(if_none_match: str, etag: str) -> bool:
    """Weak comparison of the current ``etag`` with the header's tags."""
    tags = entity_tags(if_none_match)
    if tags is None:
        return True
    current = etag.removeprefix("W/").strip('"')
    return current in tags


class NotModifiedGate:
    """A ``send`` that turns a 200 whose ETag the client holds into a bodiless 304."""

    def __init__(self, send: Send, if_none_match: str) -> None:
        self.send = send
        self.if_none_match = if_none_match
        self.not_modified = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            await self.send(self._judged(message) if message["status"] == 200 else message)
            return
        if not self.not_modified:
            await self.send(message)
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            await self.send({"type": "http.response.body", "body": b"", "more_body": False})

    def _judged(self, message: Message) -> Message:
        headers: list[tuple[bytes, bytes]] = message.get("headers", [])
        etag = next((value for name, value in headers if name.lower() == b"etag"), None)
        if etag is None or not matches(self.if_none_match, etag.decode("latin-1")):
            return message
        self.not_modified = True
        kept = [(name, value) for name, value in headers if name.lower() not in BODY_HEADERS]
        return {**message, "status": 304, "headers": kept}


class ConditionalGetMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in CONDITIONAL_METHODS:
            await self.app(scope, receive, send)
            return
        values = [value for name, value in scope["headers"] if name == b"if-none-match"]
        if not values:
            await self.app(scope, receive, send)
            return
        # Several header lines are one list (RFC 9110 §5.3).
        if_none_match = b",".join(values).decode("latin-1")
        await self.app(scope, receive, NotModifiedGate(send, if_none_match))
