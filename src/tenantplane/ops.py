"""Liveness, readiness and Prometheus metrics (outside /api/v1, no authentication)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from tenantplane.db.session import DatabaseDep
from tenantplane.http.auth import Public
from tenantplane.http.errors import ServiceUnavailable

router = APIRouter(tags=["operations"])


@router.get("/healthz")
async def healthz(_: Public) -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(_: Public, database: DatabaseDep) -> dict[str, str]:
    try:
        async with database.engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
    except Exception as exc:
        raise ServiceUnavailable("database unreachable", code="DATABASE_UNAVAILABLE") from exc
    return {"status": "ready"}


@router.get("/metrics")
async def metrics(_: Public, request: Request) -> Response:
    return Response(
        generate_latest(request.app.state.metrics_registry), media_type=CONTENT_TYPE_LATEST
    )
