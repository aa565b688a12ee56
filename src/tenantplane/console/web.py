"""The console's request plumbing: the session cookie, CSRF, forms, rendering and headers.

A page handler takes a ``Page`` (``PageDep``): the signed-in browser's credential, the tenant
of the URL, the API as that browser sees it, and who the viewer is there (``Viewer``).
A state change (any method but GET and HEAD) must carry the session's CSRF token, in the
form field ``csrf`` or the header ``X-CSRF-Token``; the cookie is SameSite=Strict besides.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qsl, quote

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.datastructures import FormData, UploadFile

from tenantplane.console.api import ApiAnswer, ConsoleApi, SignInRequired
from tenantplane.console.repository import find_session
from tenantplane.console.tokens import csrf_matches, csrf_token, is_session_token, token_hash
from tenantplane.http.names import is_dns_label

SESSION_COOKIE = "tp_console"
# Binds an OIDC sign-in to the browser that started it (SameSite=Lax: it must come back
# with the identity provider's redirect, a cross-site navigation).
SIGN_IN_COOKIE = "tp_console_sign_in"
SAFE_METHODS = frozenset({"GET", "HEAD"})

# No inline script or style, nothing from another origin, no framing, forms post only here.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}

templates = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(default=True),
    enable_async=False,
    trim_blocks=True,
    lstrip_blocks=True,
)


class AdminRequired(Exception):
    """A page that only admins can use (a create form), opened by a readonly viewer: its
    answer is ready (a 403 page saying so)."""

    def __init__(self, response: HTMLResponse) -> None:
        super().__init__("admin access required")
        self.response = response


class CsrfRefused(Exception):
    """A state change without the session's CSRF token: answered 403."""


@dataclass(frozen=True)
class Viewer:
    """Who is looking, in this tenant: what the page may offer (the API decides anyway)."""

    label: str
    is_admin: bool
    is_api_key: bool


@dataclass
class Page:
    request: Request
    tenant: str
    credential: str
    api: ConsoleApi
    viewer: Viewer
    form: FormData

    @property
    def csrf(self) -> str:
        return csrf_token(self.request.app.state.keys, self.credential)

    def render(self, template: str, status: int = 200, **values: Any) -> HTMLResponse:
        return render(
            self.request,
            template,
            status=status,
            tenant=self.tenant,
            viewer=self.viewer,
            csrf=self.csrf,
            **values,
        )

    def message(self, heading: str, message: str, status: int, back: str) -> HTMLResponse:
        """A page that only says why (a refusal, a thing not found), with the way back to
        the section ``back`` names."""
        return self.render(
            "message.html",
            status=status,
            heading=heading,
            message=message,
            back=tenant_url(self.tenant, back),
        )

    def redirect(self, path: str, notice: str | None = None) -> RedirectResponse:
        """303 to a page of this tenant (after a state change: a reload does not repeat it)."""
        target = tenant_url(self.tenant, path)
        if notice:
            target += ("&" if "?" in target else "?") + "notice=" + quote(notice)
        return RedirectResponse(target, status_code=303, headers=PAGE_HEADERS)


def tenant_url(tenant: str, path: str = "") -> str:
    return f"/console/t/{quote(tenant)}/{path.lstrip('/')}"


def render(request: Request, template: str, *, status: int = 200, **values: Any) -> HTMLResponse:
    values.setdefault("notice", request.query_params.get("notice"))
    values.setdefault("path", request.url.path)
    html = templates.get_template(template).render(request=request, **values)
    return HTMLResponse(html, status_code=status, headers=PAGE_HEADERS)


async def read_form(request: Request) -> FormData:
    """An urlencoded form (the console's only kind); empty for GET."""
    if request.method in SAFE_METHODS:
        return FormData()
    body = (await request.body()).decode("utf-8", errors="replace")
    pairs: list[tuple[str, str | UploadFile]] = list(parse_qsl(body, keep_blank_values=True))
    return FormData(pairs)


def session_credential(request: Request) -> str | None:
    token = request.cookies.get(SESSION_COOKIE)
    return token if token and is_session_token(token) else None


async def viewer_of(api: ConsoleApi, tenant: str, email: str | None) -> Viewer:
    """The viewer's role as the API reports it: a member's own membership, or for an API key
    whether the admin-only key list answers."""
    if email is not None:
        member = await api.get(f"/tenants/{quote(tenant)}/members/{quote(email)}")
        is_admin = member.ok and member.body.get("role") == "admin"
        return Viewer(label=email, is_admin=is_admin, is_api_key=False)
    keys = await api.get(f"/tenants/{quote(tenant)}/apikeys", {"limit": "1"})
    return Viewer(label="API key", is_admin=keys.ok, is_api_key=True)


async def page(request: Request, tenant: str) -> AsyncIterator[Page]:
    if not is_dns_label(tenant, min_length=2):
        raise SignInRequired("invalid tenant name")
    credential = session_credential(request)
    if credential is None:
        raise SignInRequired("", tenant)
    form = await read_form(request)
    if request.method not in SAFE_METHODS:
        presented = form.get("csrf") or request.headers.get("x-csrf-token")
        if not csrf_matches(request.app.state.keys, credential, str(presented or "")):
            raise CsrfRefused
    signed_in = await find_session(request.app.state.database.reads, token_hash(credential))
    if signed_in is None:
        raise SignInRequired("", tenant)
    # The session's validity (idle, lifetime, the key behind it) is the API's to decide.
    email = None if signed_in.api_key_cipher is not None else signed_in.email
    async with ConsoleApi(request, credential, for_page=tenant) as api:
        viewer = await viewer_of(api, tenant, email)
        yield Page(request, tenant, credential, api, viewer, form)


PageDep = Annotated[Page, Depends(page)]


async def admin_page(page: PageDep) -> Page:
    """A page only admins can use: a readonly viewer gets a 403 page saying so (opening a
    create form's URL directly), never a form the API would refuse."""
    if not page.viewer.is_admin:
        section = page.request.url.path.split("/")[4]
        raise AdminRequired(
            page.message(
                "Admins only",
                "Only the tenant's admins can do this: ask one of them.",
                403,
                section,
            )
        )
    return page


AdminPageDep = Annotated[Page, Depends(admin_page)]


def field_errors(answer: ApiAnswer) -> Mapping[str, str]:
    """An API refusal as messages by form field (the envelope's ``field``; ``""``: the form)."""
    if answer.ok:
        return {}
    field = answer.field or ""
    # Validation messages start with the field they name, which the form shows already.
    return {field: answer.error.removeprefix(f"{field}: ") if field else answer.error}
