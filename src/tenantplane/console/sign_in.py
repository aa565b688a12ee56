"""Signing in and out: OIDC for members, an API key for automation accounts, and the
one-time links `tenantplane console-login` prints on a deployment without an issuer."""

from __future__ import annotations

import structlog
from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from tenantplane.config import Settings
from tenantplane.console import service
from tenantplane.console.api import ConsoleApi
from tenantplane.console.oidc import AuthorizationRequest, OidcClient, nonce_of
from tenantplane.console.repository import find_session
from tenantplane.console.tokens import csrf_matches, new_token, token_hash
from tenantplane.console.web import (
    PAGE_HEADERS,
    SESSION_COOKIE,
    SIGN_IN_COOKIE,
    read_form,
    render,
    session_credential,
    tenant_url,
)
from tenantplane.db.engine import Database
from tenantplane.http.errors import ApiError
from tenantplane.http.names import is_dns_label
from tenantplane.http.routers import PrefixedRouter
from tenantplane.providers.identity.keys import ProviderUnavailable
from tenantplane.providers.identity.oidc import OidcVerifier

log = structlog.get_logger(__name__)
router = PrefixedRouter(prefix="/console", include_in_schema=False)


def _oidc(request: Request) -> OidcClient | None:
    """The console as the OIDC client of the issuer the API verifies tokens of (none when
    no issuer is configured)."""
    verifier = request.app.state.token_verifier
    if not isinstance(verifier, OidcVerifier):
        return None
    settings: Settings = request.app.state.settings
    secret = settings.console_oidc_client_secret
    return OidcClient(
        verifier.keys, verifier.audience, secret.get_secret_value() if secret else None
    )


def _origin(request: Request) -> str:
    settings: Settings = request.app.state.settings
    if settings.public_url:
        return settings.public_url.rstrip("/")
    return str(request.base_url).rstrip("/")


def _redirect_uri(request: Request) -> str:
    return _origin(request) + "/console/oidc/callback"


def _secure(request: Request) -> bool:
    return _origin(request).startswith("https://")


def sign_in_page(
    request: Request, *, tenant: str = "", error: str = "", field: str = "", status: int = 200
) -> HTMLResponse:
    return render(
        request,
        "sign_in.html",
        status=status,
        tenant=tenant,
        error=error,
        error_field=field,
        oidc=_oidc(request) is not None,
        viewer=None,
    )


def signed_in(request: Request, token: str, tenant: str) -> Response:
    """The session's cookie, then the tenant's clusters. A page that moves on rather than a
    redirect: a cookie set in answer to a cross-site navigation (the identity provider's
    redirect) is SameSite=Strict, so the next request must start from this site."""
    settings: Settings = request.app.state.settings
    response = render(
        request,
        "moving_on.html",
        heading="Signed in",
        target=tenant_url(tenant, "clusters"),
        link="Continue to the console",
        viewer=None,
    )
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=settings.console_session_hours * 3600,
        path="/console",
        secure=_secure(request),
        httponly=True,
        samesite="strict",
    )
    response.delete_cookie(SIGN_IN_COOKIE, path="/console")
    return response


@router.get("/")
@router.get("")
async def console_home(request: Request) -> Response:
    credential = session_credential(request)
    database: Database = request.app.state.database
    if credential is not None:
        found = await find_session(database.reads, token_hash(credential))
        if found is not None:
            return RedirectResponse(tenant_url(found.tenant, "clusters"), headers=PAGE_HEADERS)
    return RedirectResponse("/console/sign-in", headers=PAGE_HEADERS)


@router.get("/sign-in")
async def sign_in(request: Request) -> HTMLResponse:
    return sign_in_page(
        request,
        tenant=request.query_params.get("tenant", ""),
        error=request.query_params.get("error", ""),
    )


def _tenant_of(form_tenant: str) -> str | None:
    tenant = form_tenant.strip()
    return tenant if is_dns_label(tenant, min_length=2) else None


@router.post("/sign-in/key")
async def sign_in_with_key(request: Request) -> Response:
    form = await read_form(request)
    tenant = _tenant_of(str(form.get("tenant", "")))
    key = str(form.get("key", "")).strip()
    if tenant is None:
        return sign_in_page(request, error="enter your tenant's name", field="tenant", status=400)
    async with ConsoleApi(request, key) as api:
        answer = await api.get(f"/tenants/{tenant}")
    if not answer.ok:
        field = "key" if answer.status == 401 else "tenant"
        return sign_in_page(
            request, tenant=tenant, error=answer.error, field=field, status=answer.status
        )
    database: Database = request.app.state.database
    async with database.transaction() as session:
        token = await service.start_session(
            session,
            request.app.state.settings,
            request.app.state.keys,
            "API key",
            tenant,
            api_key=key,
        )
    return signed_in(request, token, tenant)


@router.post("/sign-in/oidc")
async def sign_in_with_oidc(request: Request) -> Response:
    form = await read_form(request)
    tenant = _tenant_of(str(form.get("tenant", "")))
    client = _oidc(request)
    if client is None:
        return sign_in_page(request, error="no identity provider is configured", status=400)
    if tenant is None:
        return sign_in_page(request, error="enter your tenant's name", field="tenant", status=400)
    authorization = AuthorizationRequest.new()
    browser = new_token()
    database: Database = request.app.state.database
    async with database.transaction() as session:
        state = await service.start_oidc(
            session, tenant, browser, authorization.nonce, authorization.code_verifier
        )
    try:
        url = await client.authorization_url(authorization, state, _redirect_uri(request))
    except ProviderUnavailable as exc:
        log.warning("identity provider unreachable", error=str(exc))
        return sign_in_page(
            request, tenant=tenant, error="the identity provider cannot be reached", status=503
        )
    # A page that moves on to the provider, not a redirect: browsers hold the redirect that
    # answers a form to the page's CSP form-action ('self'), which the provider is not.
    response = render(
        request,
        "moving_on.html",
        heading="Signing in",
        target=url,
        link="Continue to your identity provider",
        viewer=None,
    )
    response.set_cookie(
        SIGN_IN_COOKIE,
        browser,
        max_age=int(service.OIDC_SIGN_IN_LIFETIME.total_seconds()),
        path="/console",
        secure=_secure(request),
        httponly=True,
        samesite="lax",
    )
    return response


@router.get("/oidc/callback")
async def oidc_callback(request: Request) -> Response:
    client = _oidc(request)
    state = request.query_params.get("state", "")
    code = request.query_params.get("code", "")
    if client is None or not state or not code:
        reason = request.query_params.get("error_description") or "the sign-in did not complete"
        return sign_in_page(request, error=reason, status=400)
    database: Database = request.app.state.database
    async with database.transaction() as session:
        pending = await service.take_oidc(session, state, request.cookies.get(SIGN_IN_COOKIE))
    if pending is None or pending.code_verifier is None or pending.tenant is None:
        return sign_in_page(request, error="this sign-in expired or began elsewhere", status=400)
    try:
        id_token = await client.exchange(code, pending.code_verifier, _redirect_uri(request))
        email = await request.app.state.token_verifier.verify(id_token)
    except ProviderUnavailable as exc:
        log.warning("identity provider unreachable", error=str(exc))
        return sign_in_page(request, error="the identity provider cannot be reached", status=503)
    except ApiError as exc:
        return sign_in_page(request, tenant=pending.tenant, error=exc.error, status=exc.status)
    if nonce_of(id_token) != pending.nonce:
        return sign_in_page(
            request, error="the identity token was not for this sign-in", status=400
        )
    async with database.transaction() as session:
        token = await service.start_session(
            session, request.app.state.settings, request.app.state.keys, email, pending.tenant
        )
    return signed_in(request, token, pending.tenant)


@router.get("/sign-in/link")
async def sign_in_with_link(request: Request) -> Response:
    token = request.query_params.get("token", "")
    database: Database = request.app.state.database
    async with database.transaction() as session:
        link = await service.take_link(session, token) if token else None
        if link is None or link.email is None or link.tenant is None:
            return sign_in_page(
                request, error="this sign-in link was used or has expired", status=400
            )
        credential = await service.start_session(
            session, request.app.state.settings, request.app.state.keys, link.email, link.tenant
        )
    return signed_in(request, credential, link.tenant)


@router.post("/sign-out")
async def sign_out(request: Request) -> Response:
    form = await read_form(request)
    credential = session_credential(request)
    if credential is not None:
        if not csrf_matches(request.app.state.keys, credential, str(form.get("csrf", ""))):
            return HTMLResponse("missing or invalid CSRF token", 403, headers=PAGE_HEADERS)
        database: Database = request.app.state.database
        async with database.transaction() as session:
            await service.end_session(session, credential)
    response = RedirectResponse("/console/sign-in", status_code=303, headers=PAGE_HEADERS)
    response.delete_cookie(SESSION_COOKIE, path="/console")
    return response
