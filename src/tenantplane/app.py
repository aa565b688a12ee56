"""create_app(): routers, middleware, error handlers and the lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline
from prometheus_client import CollectorRegistry

from tenantplane import ops
from tenantplane.access import Identity
from tenantplane.alerting.policy import policy_from_settings
from tenantplane.alerting.routes import router as alerting_router
from tenantplane.apikey.cache import KeyCache
from tenantplane.apikey.routes import router as apikey_router
from tenantplane.billing.context import BillingContext
from tenantplane.billing.routes import router as billing_router
from tenantplane.billing.routes import tenant_router as billing_tenant_router
from tenantplane.cluster.review_routes import router as cluster_review_router
from tenantplane.cluster.routes import router as cluster_router
from tenantplane.cluster.routes import versions_router as cluster_versions_router
from tenantplane.config import Settings
from tenantplane.console.routes import CONSOLE_STATIC_PREFIX, install_console
from tenantplane.db.engine import Database
from tenantplane.event.actions import check_every_write_audited
from tenantplane.event.routes import router as event_router
from tenantplane.event.webhook.routes import router as webhook_router
from tenantplane.http.body_limit import RequestBodyMiddleware
from tenantplane.http.conditional import ConditionalGetMiddleware
from tenantplane.http.cors import install_cors
from tenantplane.http.documents import EncodedDocuments
from tenantplane.http.errors import error_responses, install_error_handlers
from tenantplane.http.observability import HttpMetrics, ObservabilityMiddleware, RouteTemplates
from tenantplane.http.openapi import API_PREFIX, openapi_document, operation_id
from tenantplane.http.proxy import TrustedProxyHeadersMiddleware
from tenantplane.http.ratelimit import RateLimiter, RateLimitMiddleware
from tenantplane.http.ratelimit_store import StoreGuard
from tenantplane.http.request_id import RequestIdMiddleware
from tenantplane.http.route_index import api_routes, include
from tenantplane.http.security_headers import (
    STATIC_DOCS_PREFIX,
    SecurityHeadersMiddleware,
    security_headers,
)
from tenantplane.logging import configure_logging
from tenantplane.member.routes import router as member_router
from tenantplane.metrics import exposition_registry
from tenantplane.providers.alerting.factory import backend_from_settings
from tenantplane.providers.identity import build_token_verifier
from tenantplane.reconcile.metrics import ReconcileMetrics, register_runtime_collectors
from tenantplane.secret.routes import router as secret_router
from tenantplane.tenant.routes import router as tenant_router
from tenantplane.warmup import analyse_routes, warm_up_app

DESCRIPTION = (
    "Tenant-scoped platform API: clusters, secrets, alerting, members, API keys and billing. "
    "Every `/api/v1` operation takes `Authorization: Bearer <API key or OIDC token>`; errors "
    "use one JSON envelope (`error`, and for structured errors `code`, `message`, `field`, "
    "`severity`)."
)
# Matched in this order, route by route: what clients poll (clusters, then invoices and
# secrets) comes first, so a poll is not compared with every alerting route before its own.
FEATURE_ROUTERS = (
    cluster_router,
    billing_tenant_router,
    secret_router,
    tenant_router,
    member_router,
    apikey_router,
    alerting_router,
    event_router,
    webhook_router,
    cluster_versions_router,
    billing_router,
    cluster_review_router,
)


def include_api(app: FastAPI) -> None:
    """Each feature's routes under /api/v1, included into the app itself: the framework
    matches a request router by router, twice per level of nesting, so one level less is
    one scan of every route less per request."""
    responses = error_responses(400, 401, 403, 429, 500, 503)
    for feature in FEATURE_ROUTERS:
        include(app, feature, prefix=API_PREFIX, responses=responses)


async def close_remote_clients(app: FastAPI) -> None:
    """Close the pooled clients of the request path's remote services (at shutdown)."""
    await app.state.alerting_backend.aclose()
    if app.state.token_verifier is not None:
        await app.state.token_verifier.aclose()
    # Set at startup with a payment provider (tenantplane.warmup), else by the first
    # billing request.
    billing: BillingContext | None = getattr(app.state, "billing", None)
    if billing is not None:
        await billing.provider.aclose()


def create_app(
    settings: Settings | None = None, *, rate_limit_prefix: str = "tenantplane"
) -> FastAPI:
    settings = settings or Settings()
    configure_logging(settings.log_level, settings.log_json)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Closed in reverse order: reconcilers stop first, the database goes last.
        async with AsyncExitStack() as closing:
            database = Database.from_settings(settings)
            closing.push_async_callback(database.dispose)
            app.state.database = database
            # Before the first request: stamps are the database's time (db/clock.py).
            await database.clock.anchor_or_log()
            closing.push_async_callback(close_remote_clients, app)
            warm_up_app(app)
            if settings.run_reconcilers:
                from tenantplane.reconcilers import build_supervisor

                reconciling = database.for_reconcilers()
                if reconciling is not database:
                    closing.push_async_callback(reconciling.dispose)
                # One alerting client per process: the API's, closed below.
                supervisor = build_supervisor(
                    settings,
                    reconciling,
                    ReconcileMetrics(app.state.metrics_registry),
                    shared={"alerting": app.state.alerting_backend},
                )
                supervisor.start()
                app.state.supervisor = supervisor
                closing.push_async_callback(supervisor.stop)
            yield

    # Swagger UI and ReDoc with their assets served by the app itself (no CDN).
    app = FastAPIOffline(
        title="tenantplane",
        version="1.0.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        generate_unique_id_function=operation_id,
        # Bodies are JSON whatever the client declares (curl -d sends no JSON type).
        strict_content_type=False,
    )
    app.state.settings = settings
    app.state.keys = settings.keyring()
    app.state.key_cache = KeyCache[Identity](settings.api_key_cache_seconds)
    # Encoded documents of the polled lists (http/documents.py).
    app.state.documents = EncodedDocuments()
    app.state.token_verifier = build_token_verifier(settings)
    app.state.alerting_backend = backend_from_settings(settings)
    app.state.alerting_policy = policy_from_settings(settings)
    app.state.metrics_registry = CollectorRegistry()
    register_runtime_collectors(app.state.metrics_registry)
    # What /metrics renders: the registry, or every process's metrics (serve --workers N).
    app.state.metrics_exposition = exposition_registry(app.state.metrics_registry)
    # Set by the lifespan when this process runs the reconcilers (/metrics reads it).
    app.state.supervisor = None
    app.state.rate_limiter = RateLimiter(settings, rate_limit_prefix)
    app.state.rate_limit_guard = StoreGuard(settings, app.state.metrics_registry)
    app.state.security_headers = security_headers(settings)
    app.state.route_templates = RouteTemplates()

    install_error_handlers(app)
    app.openapi = lambda: openapi_document(app)  # type: ignore[method-assign]
    include(app, ops.router)
    include_api(app)
    check_every_write_audited(api_routes(app))
    if settings.console:
        install_console(app)

    # Added innermost first: security headers and request ids wrap everything, proxies are
    # resolved before the rate limiter reads the client address. A 304 is made innermost,
    # so that it carries the rate limit's headers as the 200 it replaces would have.
    app.add_middleware(ConditionalGetMiddleware)
    app.add_middleware(
        RateLimitMiddleware,
        limiter=app.state.rate_limiter,
        guard=app.state.rate_limit_guard,
        prefixes=(API_PREFIX + "/",),
        webhook_prefixes=(API_PREFIX + "/webhooks/",),
    )
    app.add_middleware(TrustedProxyHeadersMiddleware, trusted_hosts=settings.trusted_proxies)
    app.add_middleware(
        RequestBodyMiddleware, max_bytes=settings.max_body_bytes, form_prefixes=("/console/",)
    )
    app.add_middleware(
        ObservabilityMiddleware,
        metrics=HttpMetrics(app.state.metrics_registry),
        templates=app.state.route_templates,
    )
    app.add_middleware(RequestIdMiddleware)
    # Outside the rate limiter and the body limit: their refusals carry CORS headers too, so
    # that a browser application can read a 429's Retry-After.
    install_cors(app, settings.cors_origins)
    app.add_middleware(
        SecurityHeadersMiddleware,
        headers=app.state.security_headers,
        cacheable_prefixes=(STATIC_DOCS_PREFIX, CONSOLE_STATIC_PREFIX),
    )
    return app


def serving_app(settings: Settings) -> FastAPI:
    """The app of a server's process: ``create_app``'s, with every route analysed before the
    first request (tenantplane.warmup.analyse_routes)."""
    app = create_app(settings)
    analyse_routes(app)
    return app
