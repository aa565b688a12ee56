"""Prometheus metrics and one structured access-log line per request."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import structlog
from fastapi import FastAPI
from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.types import ASGIApp, Receive, Scope, Send

from tenantplane.http.asgi import StatusRecorder
from tenantplane.http.route_index import templates_by_endpoint

access_log = structlog.get_logger("tenantplane.access")

# RFC 9110's methods plus PATCH. Anything else shares one label: a method is any token a
# client cares to send, and each distinct label value would be a new series in /metrics.
KNOWN_METHODS = frozenset(
    {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"}
)
OTHER_METHOD = "other"


def method_label(method: str) -> str:
    return method if method in KNOWN_METHODS else OTHER_METHOD


class HttpMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "tenantplane_http_requests_total",
            "HTTP requests by route template, method and status.",
            ["route", "method", "status"],
            registry=registry,
        )
        self.latency = Histogram(
            "tenantplane_http_request_duration_seconds",
            "HTTP request latency by route template and method.",
            ["route", "method"],
            registry=registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )


class RouteTemplates:
    """Maps the matched endpoint back to its full path template, for metric labels."""

    def __init__(self) -> None:
        self._templates: dict[tuple[Callable[..., Any], str], str] | None = None

    def build(self, app: FastAPI) -> dict[tuple[Callable[..., Any], str], str]:
        """The index, made now if it is not yet (at startup: tenantplane.warmup)."""
        if self._templates is None:
            self._templates = templates_by_endpoint(app)
        return self._templates

    def of(self, scope: Scope) -> str:
        endpoint, route = scope.get("endpoint"), scope.get("route")
        if endpoint is None or route is None:
            # Unmatched paths share one label: raw paths would let any client grow the series.
            return str(getattr(route, "path", "<unmatched>"))
        template = self.build(scope["app"]).get((endpoint, scope["method"]))
        return template or str(getattr(route, "path", "<unmatched>"))


class ObservabilityMiddleware:
    def __init__(self, app: ASGIApp, metrics: HttpMetrics, templates: RouteTemplates) -> None:
        self.app = app
        self.metrics = metrics
        self.templates = templates

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        recorder = StatusRecorder(send, default=500)
        try:
            await self.app(scope, receive, recorder)
        finally:
            elapsed = time.perf_counter() - started
            route, method = self.templates.of(scope), scope["method"]
            label = method_label(method)
            self.metrics.requests.labels(route, label, str(recorder.status)).inc()
            self.metrics.latency.labels(route, label).observe(elapsed)
            client = scope.get("client")
            access_log.info(
                "request",
                method=method,
                path=scope["path"],
                route=route,
                status=recorder.status,
                duration_ms=round(elapsed * 1000, 2),
                client=client[0] if client else None,
            )
