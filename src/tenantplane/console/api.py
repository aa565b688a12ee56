"""The console's way to its data: the public API, called in-process as the browser's session.

Every read and write goes through the API's own routes (authentication, access checks, rate
limits by the browser's address, audit events), so the console can never do more than the
API allows its user. The call stays inside the process (an ASGI transport, no socket).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi import Request

from tenantplane.http.openapi import API_PREFIX
from tenantplane.http.request_id import request_id_of


class SignInRequired(Exception):
    """The browser has no live session: answered with the sign-in page (console/routes.py)."""

    def __init__(self, message: str = "", tenant: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.tenant = tenant


@dataclass(frozen=True)
class ApiAnswer:
    status: int
    body: Any
    headers: httpx.Headers = field(default_factory=httpx.Headers)

    @property
    def ok(self) -> bool:
        return self.status < 400

    @property
    def error(self) -> str:
        """The envelope's message (structured errors: message, else error)."""
        if isinstance(self.body, dict):
            return str(self.body.get("message") or self.body.get("error") or "")
        return f"the API answered {self.status}"

    @property
    def field(self) -> str | None:
        """The field a validation error names (the envelope's ``field``)."""
        if isinstance(self.body, dict) and isinstance(self.body.get("field"), str):
            return str(self.body["field"])
        return None

    @property
    def code(self) -> str | None:
        if isinstance(self.body, dict) and isinstance(self.body.get("code"), str):
            return str(self.body["code"])
        return None


class ConsoleApi:
    """The API as the session presenting ``credential`` sees it. For a page of ``tenant``
    (``for_page``), a 401 ends the page: the session is over, the browser signs in again."""

    def __init__(self, request: Request, credential: str, for_page: str | None = None) -> None:
        self.for_page = for_page
        client = request.client
        transport = httpx.ASGITransport(
            app=request.app,
            # The browser's address: rate limits and audit events name it, not loopback.
            client=(client.host, client.port) if client else ("127.0.0.1", 0),
        )
        headers = {"Authorization": f"Bearer {credential}"}
        # The page's request id: its API calls are logged and audited under the same one.
        request_id = request_id_of(request.scope)
        if request_id:
            headers["X-Request-Id"] = request_id
        self._client = httpx.AsyncClient(
            transport=transport,
            base_url=f"http://{request.url.netloc}{API_PREFIX}",
            headers=headers,
        )

    async def __aenter__(self) -> ConsoleApi:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self._client.aclose()

    async def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> ApiAnswer:
        response = await self._client.request(
            method, path, json=json, params=params, headers=headers
        )
        body: Any = None
        if response.content:
            try:
                body = response.json()
            except ValueError:
                body = response.text
        answer = ApiAnswer(response.status_code, body, response.headers)
        if answer.status == 401 and self.for_page is not None:
            raise SignInRequired(answer.error, self.for_page)
        return answer

    async def get(self, path: str, params: dict[str, str] | None = None) -> ApiAnswer:
        return await self.call("GET", path, params=params)
