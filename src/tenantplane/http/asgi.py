"""Small ASGI helpers shared by the middlewares."""

from __future__ import annotations

from starlette.types import Message, Send


class StatusRecorder:
    """A `send` that passes every message on and remembers the response status."""

    def __init__(self, send: Send, default: int) -> None:
        self.send = send
        self.status = default

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        await self.send(message)
