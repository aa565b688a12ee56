"""Small ASGI helpers shared by the middlewares."""

from __future__ import annotations

from starlette.types import Message, Send

# Where the rate limiter leaves a request's RateLimit-* headers in its scope, for answers
# made outside the middlewares (the 500 handler).
RATE_LIMIT_HEADERS = "tenantplane.rate_limit_headers"


class StatusRecorder:
    """A `send` that passes every message on and remembers the response status."""

    def __init__(self, send: Send, default: int) -> None:
        self.send = send
        self.status = default

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        await self.send(message)
