"""Real HTTP through the ASGI app (lifespan included)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from fastapi import FastAPI

from tenantplane.app import create_app
from tenantplane.config import Settings

BASE_URL = "http://tenantplane.test"


@asynccontextmanager
async def running_app(settings: Settings, **options: str) -> AsyncIterator[FastAPI]:
    app = create_app(settings, **options)
    async with app.router.lifespan_context(app):
        yield app


@asynccontextmanager
async def api_client(
    app: FastAPI, *, ip: str = "203.0.113.10", headers: dict[str, str] | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False, client=(ip, 40000))
    async with httpx.AsyncClient(
        transport=transport, base_url=f"{BASE_URL}/api/v1", headers=headers
    ) as client:
        yield client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
