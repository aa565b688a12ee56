"""Signing in to the console (one-time links, API keys, OIDC with PKCE against a real
provider) and the session's life: its cookie, sign-out, the idle and absolute timeouts, and
the credential behind it losing its access."""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update

from tenantplane.console.models import ConsoleSession, ConsoleSignIn
from tenantplane.console.web import CONTENT_SECURITY_POLICY, SESSION_COOKIE, SIGN_IN_COOKIE
from tenantplane.db.base import utcnow
from tenantplane.db.engine import Database
from tests.conftest import accepting, make_settings
from tests.console.session import console_session, sign_in_link
from tests.factories import Factory
from tests.http_client import BASE_URL, running_app
from tests.oidc_provider import MockProvider

# The provider (oidc-provider-mock 0.3) uses authlib APIs that authlib now marks deprecated.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:authlib")


def browser(app: FastAPI, cookie: str | None = None) -> httpx.AsyncClient:
    """A browser of its own (its own cookies: the session ``cookie`` when given)."""
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False, client=("203.0.113.30", 1))
    cookies = {SESSION_COOKIE: cookie} if cookie else None
    return httpx.AsyncClient(transport=transport, base_url=BASE_URL, cookies=cookies)


async def test_a_link_signs_in_once_with_a_strict_http_only_cookie(
    app: FastAPI, factory: Factory
) -> None:
    tenant = await factory.tenant()
    link = await sign_in_link(
        app.state.database, app.state.settings, tenant.name, tenant.admin_email
    )
    async with browser(app) as http:
        first = await http.get(link)
        assert first.status_code == 200
        cookie = first.headers["set-cookie"]
        assert cookie.startswith(f"{SESSION_COOKIE}=tpc_")
        for attribute in ("HttpOnly", "Path=/console", "SameSite=strict"):
            assert attribute.lower() in cookie.lower()
        assert "secure" not in cookie.lower()  # plain HTTP here: a Secure cookie would be lost
        assert first.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        page = await http.get(f"/console/t/{tenant.name}/clusters")
        assert page.status_code == 200
        assert tenant.admin_email in page.text
    async with browser(app) as http:
        again = await http.get(link)
        assert again.status_code == 400
        assert "used or has expired" in again.text
        assert SESSION_COOKIE not in again.headers.get("set-cookie", "")


async def test_an_expired_link_is_refused(
    app: FastAPI, database: Database, factory: Factory
) -> None:
    tenant = await factory.tenant()
    link = await sign_in_link(database, app.state.settings, tenant.name, tenant.admin_email)
    async with database.transaction() as session:
        await session.execute(
            update(ConsoleSignIn).values(expires_at=utcnow() - timedelta(seconds=1))
        )
    async with browser(app) as http:
        assert (await http.get(link)).status_code == 400


async def test_pages_without_a_session_lead_to_the_sign_in_page(
    app: FastAPI, factory: Factory
) -> None:
    tenant = await factory.tenant()
    async with browser(app) as http:
        page = await http.get(f"/console/t/{tenant.name}/clusters")
        assert page.status_code == 303
        assert page.headers["location"] == f"/console/sign-in?tenant={tenant.name}"
    async with browser(app, "tpc_" + "x" * 43) as forger:
        forged = await forger.get(f"/console/t/{tenant.name}/clusters")
        assert forged.status_code == 303


async def test_an_api_key_signs_in_and_its_revocation_ends_the_session(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    async with browser(app) as http:
        wrong = await http.post(
            "/console/sign-in/key", data={"tenant": tenant.name, "key": "svc_" + "0" * 40}
        )
        assert wrong.status_code == 401
        assert 'id="key-error"' in wrong.text
        signed = await http.post(
            "/console/sign-in/key", data={"tenant": tenant.name, "key": tenant.readonly_key}
        )
        assert signed.status_code == 200
        page = await http.get(f"/console/t/{tenant.name}/clusters")
        assert page.status_code == 200
        assert "API key" in page.text
        assert "read-only" in page.text
        keys = (await client.get(f"{tenant.path}/apikeys", headers=admin(tenant.admin_key))).json()
        readonly = next(item for item in keys["items"] if item["role"] == "readonly")
        revoked = await client.delete(
            f"{tenant.path}/apikeys/{readonly['id']}", headers=admin(tenant.admin_key)
        )
        assert revoked.status_code == 204
        after = await http.get(f"/console/t/{tenant.name}/clusters")
        assert after.status_code == 303
        assert after.headers["location"].startswith("/console/sign-in")


def admin(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def test_sign_out_ends_the_session_on_the_server(app: FastAPI, factory: Factory) -> None:
    tenant = await factory.tenant()
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        cookie = console.http.cookies[SESSION_COOKIE]
        refused = await console.http.post("/console/sign-out", data={})
        assert refused.status_code == 403
        out = await console.http.post("/console/sign-out", data={"csrf": console.csrf})
        assert out.status_code == 303
        assert out.headers["location"] == "/console/sign-in"
    async with browser(app, cookie) as http:
        replayed = await http.get(f"/console/t/{tenant.name}/clusters")
        assert replayed.status_code == 303
        api = await http.get(f"/api/v1/tenants/{tenant.name}/clusters", headers=admin(cookie))
        assert api.status_code == 401


@pytest.mark.parametrize(
    "ended",
    [
        {"last_seen_at": utcnow() - timedelta(minutes=31)},  # idle past 30 minutes
        {"expires_at": utcnow() - timedelta(seconds=1)},  # past its 12 hours
    ],
    ids=["idle", "absolute"],
)
async def test_a_session_ends_when_idle_or_old(
    app: FastAPI, database: Database, factory: Factory, ended: dict[str, object]
) -> None:
    tenant = await factory.tenant()
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        async with database.transaction() as session:
            await session.execute(update(ConsoleSession).values(**ended))
        page = await console.get("clusters")
        assert page.status_code == 303
        assert (
            "sign+in+again" in page.headers["location"] or "sign%20in" in page.headers["location"]
        )


async def test_a_removed_member_sees_the_refusal_not_the_tenant(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await factory.member(tenant.id, "gone@example.com")
    async with console_session(app, tenant.name, "gone@example.com") as console:
        removed = await client.delete(
            f"{tenant.path}/members/gone@example.com", headers=admin(tenant.admin_key)
        )
        assert removed.status_code == 204
        page = await console.get("clusters")
        assert page.status_code == 200
        assert "not a member of this tenant" in page.text


@pytest.fixture
async def oidc_app(
    database: Database, database_url: str, tmp_path: Path, oidc_provider: MockProvider
) -> AsyncIterator[FastAPI]:
    settings = make_settings(
        database_url, tmp_path, **accepting(oidc_provider), console_oidc_client_secret="any"
    )
    async with running_app(settings) as application:
        yield application


def provider_location(started: httpx.Response) -> str:
    """Where the page answering the sign-in form moves on to (the authorization request)."""
    found = re.search(r'<meta http-equiv="refresh" content="0; url=([^"]+)">', started.text)
    assert found is not None, started.text
    return html.unescape(found.group(1))


async def authorize_at_provider(provider: MockProvider, location: str, email: str) -> str:
    """The provider's login form answered for ``email``: the redirect back (with the code)."""
    async with httpx.AsyncClient() as http:
        claims = {"email": email, "email_verified": True}
        (await http.put(f"{provider.issuer}/users/{email}", json=claims)).raise_for_status()
        answered = await http.post(location, data={"sub": email})
    assert answered.status_code == 302, answered.text
    return answered.headers["location"]


async def test_a_member_signs_in_with_oidc_and_pkce(
    oidc_app: FastAPI, factory: Factory, oidc_provider: MockProvider
) -> None:
    tenant = await factory.tenant()
    async with browser(oidc_app) as http:
        started = await http.post("/console/sign-in/oidc", data={"tenant": tenant.name})
        assert started.status_code == 200
        location = provider_location(started)
        query = parse_qs(urlsplit(location).query)
        assert location.startswith(oidc_provider.issuer)
        assert query["code_challenge_method"] == ["S256"]
        assert (
            len(base64.urlsafe_b64decode(query["code_challenge"][0] + "="))
            == hashlib.sha256().digest_size
        )
        assert query["redirect_uri"] == [f"{BASE_URL}/console/oidc/callback"]
        assert query["state"][0]
        assert query["nonce"][0]
        callback = await authorize_at_provider(oidc_provider, location, tenant.admin_email)
        signed = await http.get(callback.removeprefix(BASE_URL))
        assert signed.status_code == 200, signed.text
        assert SESSION_COOKIE in signed.headers["set-cookie"]
        page = await http.get(f"/console/t/{tenant.name}/clusters")
        assert page.status_code == 200
        assert tenant.admin_email in page.text
        # The state is good for one use.
        replayed = await http.get(callback.removeprefix(BASE_URL))
        assert replayed.status_code == 400


async def test_an_oidc_callback_in_another_browser_is_refused(
    oidc_app: FastAPI, factory: Factory, oidc_provider: MockProvider
) -> None:
    """Login CSRF: a callback is taken only by the browser that began the sign-in."""
    tenant = await factory.tenant()
    async with browser(oidc_app) as victim, browser(oidc_app) as attacker:
        started = await attacker.post("/console/sign-in/oidc", data={"tenant": tenant.name})
        assert SIGN_IN_COOKIE in started.headers["set-cookie"]
        callback = await authorize_at_provider(
            oidc_provider, provider_location(started), tenant.admin_email
        )
        refused = await victim.get(callback.removeprefix(BASE_URL))
        assert refused.status_code == 400
        assert SESSION_COOKIE not in refused.headers.get("set-cookie", "")


async def test_the_cookie_is_secure_when_served_over_tls(
    database: Database, database_url: str, tmp_path: Path, factory: Factory
) -> None:
    settings = make_settings(database_url, tmp_path, public_url="https://console.example.com")
    tenant = await factory.tenant()
    async with running_app(settings) as tls_app, browser(tls_app) as http:
        link = await sign_in_link(database, settings, tenant.name, tenant.admin_email)
        signed_in = await http.get(link)
        assert signed_in.status_code == 200
        assert "; secure" in signed_in.headers["set-cookie"].lower()
