"""Forwarded headers, honoured from TENANTPLANE_TRUSTED_PROXIES only.

uvicorn's middleware takes X-Forwarded-For (the client address: rate limits, logs) and
X-Forwarded-Proto (the scheme) from trusted peers. This one also takes X-Forwarded-Host from
them, as the request's Host, so that absolute URLs (Location, http/location.py) name the host
the client reached when the proxy does not pass Host through. With several values, the last
one counts: the one the nearest proxy wrote (a proxy should set the header, not append to
it). A value that is not a host with an optional port is ignored. From any other peer the
header is ignored: a client cannot choose the host of the URLs it is sent.
"""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

# A registered name or IPv4 address, or a bracketed IPv6 address; an optional port.
HOST = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?"
)


def forwarded_host(headers: list[tuple[bytes, bytes]]) -> bytes | None:
    values = [value for name, value in headers if name == b"x-forwarded-host"]
    if not values:
        return None
    last = values[-1].decode("latin-1").rsplit(",", 1)[-1].strip()
    return last.encode("ascii") if HOST.fullmatch(last) else None


class TrustedProxyHeadersMiddleware(ProxyHeadersMiddleware):
    def __init__(self, app: ASGIApp, trusted_hosts: list[str] | str = "127.0.0.1") -> None:
        super().__init__(app, trusted_hosts)  # type: ignore[arg-type]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:  # type: ignore[override]
        client = scope.get("client") if scope["type"] == "http" else None
        if client and client[0] in self.trusted_hosts:
            host = forwarded_host(scope["headers"])
            if host is not None:
                headers = [(name, value) for name, value in scope["headers"] if name != b"host"]
                scope = {**scope, "headers": [(b"host", host), *headers]}
        await super().__call__(scope, receive, send)  # type: ignore[arg-type]
