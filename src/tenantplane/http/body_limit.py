"""Request bodies: JSON only, and at most the configured size (413), streamed or not.

Both answers use the envelope. The size check raises an HTTPException from ``receive`` so
that FastAPI passes it through to our handlers instead of turning it into a parse error.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tenantplane.http.errors import ApiError

_BODY_METHODS = {"POST", "PUT", "PATCH"}


class BodyTooLarge(HTTPException):
    def __init__(self) -> None:
        super().__init__(status_code=413)


def _too_large(limit: int) -> ApiError:
    return ApiError(413, f"request body exceeds {limit} bytes", code="PAYLOAD_TOO_LARGE")


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


class RequestBodyMiddleware:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

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
        if has_body and content_type and not _is_json(content_type):
            error = ApiError(
                400,
                "request body must be JSON (Content-Type: application/json)",
                code="UNSUPPORTED_MEDIA_TYPE",
            )
            await error.response()(scope, receive, send)
            return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge
            return message

        await self.app(scope, limited_receive, send)
