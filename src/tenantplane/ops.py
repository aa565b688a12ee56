"""Liveness, readiness and Prometheus metrics (outside /api/v1, no authentication)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from tenantplane.access import Public
from tenantplane.config import Settings
from tenantplane.db.engine import Database
from tenantplane.db.session import DatabaseDep
from tenantplane.http.errors import ServiceUnavailable, error_responses
from tenantplane.http.ratelimit_store import StoreGuard
from tenantplane.http.schemas import OutputModel
from tenantplane.reconcile.supervisor import Supervisor

router = APIRouter(tags=["operations"])

METRICS_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Prometheus text exposition format",
        "content": {"text/plain": {"schema": {"type": "string"}}},
    }
}


class Health(OutputModel):
    status: Literal["ok"]


CheckResult = Literal["ok", "unavailable"]


class Readiness(OutputModel):
    # degraded: serving, but a dependency whose loss the deployment tolerates is down (Redis
    # with TENANTPLANE_REDIS_FAILURE_POLICY=open: requests are served without rate limits).
    status: Literal["ready", "degraded"]
    checks: dict[str, CheckResult]


@router.get("/", include_in_schema=False)
async def root(_: Public) -> RedirectResponse:
    # Someone opening the service's address in a browser finds its API documentation.
    return RedirectResponse("/docs", status_code=307)


@router.get("/healthz")
async def healthz(_: Public) -> Health:
    """Liveness.

    Answers while the process serves requests.
    """
    return Health(status="ok")


@router.get("/readyz", responses=error_responses(503))
async def readyz(_: Public, request: Request, database: DatabaseDep) -> Readiness:
    """Readiness.

    Checks the database and, when configured, Redis. Answers 503 when the database is
    unreachable, or Redis is and TENANTPLANE_REDIS_FAILURE_POLICY is closed; 200 otherwise
    (`degraded` while Redis is down under the open policy).
    """
    checks: dict[str, CheckResult] = {"database": await _database_check(database)}
    settings: Settings = request.app.state.settings
    if settings.redis_url:
        guard: StoreGuard = request.app.state.rate_limit_guard
        reachable = await guard.probe(request.app.state.rate_limiter.storage)
        checks["redis"] = "ok" if reachable else "unavailable"
    if checks["database"] != "ok":
        raise ServiceUnavailable(
            f"database unreachable ({_summary(checks)})", code="DATABASE_UNAVAILABLE"
        )
    if checks.get("redis", "ok") != "ok":
        if settings.redis_failure_policy == "closed":
            raise ServiceUnavailable(
                f"redis unreachable and TENANTPLANE_REDIS_FAILURE_POLICY is closed "
                f"({_summary(checks)})",
                code="REDIS_UNAVAILABLE",
            )
        return Readiness(status="degraded", checks=checks)
    return Readiness(status="ready", checks=checks)


async def _database_check(database: Database) -> CheckResult:
    try:
        async with database.engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
    except Exception:
        return "unavailable"
    return "ok"


def _summary(checks: dict[str, CheckResult]) -> str:
    return ", ".join(f"{name} {result}" for name, result in checks.items())


@router.get("/metrics", response_class=Response, responses=METRICS_RESPONSE)
async def metrics(_: Public, request: Request) -> Response:
    """Prometheus metrics.

    The Prometheus text exposition format.
    """
    state = request.app.state
    if state.settings.redis_url:
        # tenantplane_redis_up as of this scrape, even when no request used Redis lately.
        await state.rate_limit_guard.probe(state.rate_limiter.storage)
    supervisor: Supervisor | None = state.supervisor
    if supervisor is not None:
        await supervisor.refresh_metrics()
    return Response(generate_latest(state.metrics_exposition), media_type=CONTENT_TYPE_LATEST)
