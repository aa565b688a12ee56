"""Request bodies: JSON only, at most the configured size (413), streamed or not, and
free of what ``tenantplane.http.json_guard`` refuses. Every answer uses the envelope."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tenantplane.http.errors import ApiError
from tenantplane.http.json_guard import check_json_body

_BODY_METHODS = {"POST", "PUT", "PATCH"}


def _too_large(limit: int) -> ApiError:
    return ApiError(413, f"request body exceeds {limit} bytes", code="PAYLOAD_TOO_LARGE")


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole body, or None once it grows past ``limit`` (streamed bodies included)."""
    chunks: list[bytes] = []
    received = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        received += len(chunk)
        if received > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the already-read body to the app, then defers to the client."""
    delivered = False

    async def replayed() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


FORM = "application/x-www-form-urlencoded"


def _is_form(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() == FORM


def _unsupported(message: str) -> ApiError:
    return ApiError(415, message, code="UNSUPPORTED_MEDIA_TYPE")


class RequestBodyMiddleware:
    """Bodies at most ``max_bytes``, and JSON; under ``form_prefixes`` (the console's pages),
    urlencoded forms instead."""

    def __init__(self, app: ASGIApp, max_bytes: int, form_prefixes: tuple[str, ...] = ()) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.form_prefixes = form_prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await _too_large(self.max_bytes).response()(scope, receive, send)
            return
        content_type = headers.get(b"content-type", b"").decode("latin-1")
        has_body = (declared.isdigit() and int(declared) > 0) or b"transfer-encoding" in headers
        form = scope["path"].startswith(self.form_prefixes)
        accepted = _is_form if form else _is_json
        if has_body and content_type and not accepted(content_type):
            if form:
                await _unsupported(f"a form's body must be {FORM}").response()(scope, receive, send)
                return
            error = _unsupported("request body must be JSON (Content-Type: application/json)")
            await error.response()(scope, receive, send)
            return
        # Read in full (it is at most max_bytes) so that it is checked once, here, for
        # every route, before FastAPI parses it again for the route's model.
        body = await _read_body(receive, self.max_bytes)
        if body is None:
            await _too_large(self.max_bytes).response()(scope, receive, send)
            return
        problem = check_json_body(body) if body and not form else None
        if problem is not None:
            await problem.response()(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)
