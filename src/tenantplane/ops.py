"""Liveness, readiness and Prometheus metrics (outside /api/v1, no authentication)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from tenantplane.db.session import DatabaseDep
from tenantplane.http.auth import Public
from tenantplane.http.errors import ServiceUnavailable, error_responses
from tenantplane.http.schemas import OutputModel

router = APIRouter(tags=["operations"])

METRICS_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Prometheus text exposition format",
        "content": {"text/plain": {"schema": {"type": "string"}}},
    }
}


class Health(OutputModel):
    status: Literal["ok"]


class Readiness(OutputModel):
    status: Literal["ready"]


@router.get("/healthz")
async def healthz(_: Public) -> Health:
    """Liveness.

    Answers while the process serves requests.
    """
    return Health(status="ok")


@router.get("/readyz", responses=error_responses(503))
async def readyz(_: Public, database: DatabaseDep) -> Readiness:
    """Readiness.

    Answers 200 when the database is reachable, 503 otherwise.
    """
    try:
        async with database.engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
    except Exception as exc:
        raise ServiceUnavailable("database unreachable", code="DATABASE_UNAVAILABLE") from exc
    return Readiness(status="ready")


@router.get("/metrics", response_class=Response, responses=METRICS_RESPONSE)
async def metrics(_: Public, request: Request) -> Response:
    """Prometheus metrics.

    The Prometheus text exposition format.
    """
    return Response(
        generate_latest(request.app.state.metrics_registry), media_type=CONTENT_TYPE_LATEST
    )
