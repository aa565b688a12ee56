"""Response headers every answer carries (docs/security.md, "Response headers").

* ``Cache-Control: no-store`` unless the response chose its own caching: API answers carry
  credentials (created keys, receipt and portal links) and tenant data that no browser,
  proxy or CDN cache should keep. The documentation's and the console's static assets are
  left to caches.
* ``X-Content-Type-Options: nosniff``: a browser never guesses a type other than the one sent.
* ``Strict-Transport-Security`` when ``TENANTPLANE_HSTS`` is on (only behind TLS: the header
  is meaningless over plain HTTP, and pins the host name to HTTPS for its max-age).

uvicorn's own ``server`` header is turned off where the server is built (server.py).
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tenantplane.config import Settings

# Swagger UI's and ReDoc's JavaScript and CSS, served by the app itself (fastapi-offline).
STATIC_DOCS_PREFIX = "/static-offline-docs/"


def security_headers(settings: Settings) -> dict[str, str]:
    """The headers set on every response whatever it is (Cache-Control aside)."""
    headers = {"X-Content-Type-Options": "nosniff"}
    if settings.hsts:
        headers["Strict-Transport-Security"] = f"max-age={settings.hsts_max_age_seconds}"
    return headers


class SecurityHeadersMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        headers: dict[str, str],
        cacheable_prefixes: tuple[str, ...] = (STATIC_DOCS_PREFIX,),
    ) -> None:
        self.app = app
        self.headers = headers
        # Static assets (no credentials, no tenant data) are left to caches.
        self.cacheable_prefixes = cacheable_prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cacheable = scope["path"].startswith(self.cacheable_prefixes)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in self.headers.items():
                    headers[name] = value
                if not cacheable and "cache-control" not in headers:
                    headers["Cache-Control"] = "no-store"
            await send(message)

        await self.app(scope, receive, send_with_headers)
