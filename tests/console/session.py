"""A signed-in console session over real HTTP through the app: what a browser sends (the
session cookie, forms with the CSRF token), without the browser (tests/console/browser/
drives Chromium itself)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from urllib.parse import urlencode

import httpx
from fastapi import FastAPI

from tenantplane.config import Settings
from tenantplane.console import service
from tenantplane.console.web import SESSION_COOKIE
from tenantplane.db.engine import Database
from tests.http_client import BASE_URL

CSRF_FIELD = re.compile(r'name="csrf" value="([0-9a-f]+)"')


@dataclass
class ConsoleSession:
    http: httpx.AsyncClient
    tenant: str
    csrf: str

    def url(self, path: str = "") -> str:
        return f"/console/t/{self.tenant}/{path.lstrip('/')}"

    async def get(self, path: str = "") -> httpx.Response:
        return await self.http.get(self.url(path))

    async def post(
        self,
        path: str,
        data: dict[str, str] | list[tuple[str, str]] | None = None,
        *,
        csrf: bool = True,
    ) -> httpx.Response:
        """A form posted as a browser posts it (with the page's CSRF token unless told)."""
        fields = list(data.items()) if isinstance(data, dict) else list(data or [])
        if csrf:
            fields.append(("csrf", self.csrf))
        return await self.http.post(
            self.url(path),
            content=urlencode(fields),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )


async def sign_in_link(database: Database, settings: Settings, tenant: str, email: str) -> str:
    """What `tenantplane console-login` prints, as a path."""
    async with database.transaction() as session:
        token = await service.create_link(session, settings, tenant, email)
    return f"/console/sign-in/link?token={token}"


@asynccontextmanager
async def console_session(
    app: FastAPI, tenant: str, email: str, *, ip: str = "203.0.113.20"
) -> AsyncIterator[ConsoleSession]:
    """``email`` signed in to ``tenant``'s console through a one-time link."""
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False, client=(ip, 40001))
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as http:
        link = await sign_in_link(app.state.database, app.state.settings, tenant, email)
        signed_in = await http.get(link)
        assert signed_in.status_code == 200, signed_in.text
        assert http.cookies.get(SESSION_COOKIE)
        first = await http.get(f"/console/t/{tenant}/clusters")
        assert first.status_code == 200, first.text
        found = CSRF_FIELD.search(first.text)
        assert found is not None
        yield ConsoleSession(http, tenant, found.group(1))
