"""API keys (admins only, as in the API): the list, create (the raw key shown once, on the
answer itself) and revoke behind a typed confirmation."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import quote

from fastapi.responses import HTMLResponse, Response

from tenantplane.console.api import ApiAnswer
from tenantplane.console.web import AdminPageDep, Page, PageDep, field_errors
from tenantplane.http.routers import PrefixedRouter

router = PrefixedRouter(prefix="/console/t/{tenant}/apikeys", include_in_schema=False)

ROLES = ("readonly", "admin")
# Said instead of a bare refusal: only admins see or manage a tenant's keys.
ADMINS_ONLY = (
    "API keys are managed by the tenant's admins: your role here is read-only, so the keys "
    "are not shown to you. Ask an admin for a key, or to make you an admin."
)


def _path(page: Page, key_id: str = "") -> str:
    base = f"/tenants/{quote(page.tenant)}/apikeys"
    return f"{base}/{quote(key_id, safe='')}" if key_id else base


@router.get("")
async def list_api_keys(page: PageDep) -> HTMLResponse:
    answer = await page.api.get(_path(page), {"limit": "1000"})
    items: list[dict[str, Any]] = answer.body.get("items", []) if answer.ok else []
    return page.render(
        "apikeys/list.html",
        status=200 if answer.ok else answer.status,
        answer=answer,
        items=items,
        more=answer.ok and bool(answer.body.get("continue")),
        admins_only=ADMINS_ONLY,
    )


def _create_form(
    page: Page, values: Mapping[str, str], errors: Mapping[str, str], status: int = 200
) -> HTMLResponse:
    return page.render(
        "apikeys/new.html",
        status=status,
        values=values,
        errors=errors,
        roles=ROLES,
        admins_only=ADMINS_ONLY,
        # An expiry at the start of today (UTC) would be in the past already.
        earliest=(datetime.now(UTC).date() + timedelta(days=1)).isoformat(),
    )


@router.get("/new")
async def new_api_key(page: AdminPageDep) -> HTMLResponse:
    return _create_form(page, {"role": "readonly"}, {})


def _expiry(value: str) -> str | None:
    """The date field as the API's instant: the key stops working as that day begins (UTC).
    Raises ValueError for a value that is not a date."""
    return f"{date.fromisoformat(value).isoformat()}T00:00:00Z" if value else None


@router.post("")
async def create_api_key(page: PageDep) -> Response:
    values = {
        key: str(page.form.get(key, "")).strip() for key in ("displayName", "role", "expiresAt")
    }
    try:
        expires_at = _expiry(values["expiresAt"])
    except ValueError:
        return _create_form(page, values, {"expiresAt": "expected a date (YYYY-MM-DD)"}, 400)
    body = {"displayName": values["displayName"], "role": values["role"]}
    if expires_at is not None:
        body["expiresAt"] = expires_at
    answer = await page.api.call("POST", _path(page), json=body)
    if not answer.ok:
        return _create_form(page, values, field_errors(answer), answer.status)
    # Rendered here, not after a redirect: the raw key exists in this answer only.
    created = page.render("apikeys/created.html", status=201, key=answer.body)
    created.headers["Cache-Control"] = "no-store"
    return created


async def _detail(
    page: Page, key_id: str, *, status: int = 200, errors: Mapping[str, str] | None = None
) -> HTMLResponse:
    answer = await page.api.get(_path(page, key_id))
    if not answer.ok:
        return _refused_page(page, answer)
    return page.render("apikeys/detail.html", status=status, key=answer.body, errors=errors or {})


def _refused_page(page: Page, answer: ApiAnswer) -> HTMLResponse:
    message = ADMINS_ONLY if answer.status == 403 else answer.error
    return page.message("API key", message, answer.status, "apikeys")


@router.get("/{key_id}")
async def api_key_detail(page: PageDep, key_id: str) -> HTMLResponse:
    return await _detail(page, key_id)


@router.post("/{key_id}/revoke")
async def revoke_api_key(page: PageDep, key_id: str) -> Response:
    key = await page.api.get(_path(page, key_id))
    if not key.ok:
        return _refused_page(page, key)
    name = str(key.body["displayName"])
    if str(page.form.get("confirm", "")) != name:
        errors = {"confirm": f"type {name} to confirm revoking the key"}
        return await _detail(page, key_id, status=400, errors=errors)
    answer = await page.api.call("DELETE", _path(page, key_id))
    if not answer.ok:
        return await _detail(page, key_id, status=answer.status, errors=field_errors(answer))
    return page.redirect("apikeys", f"API key {name} was revoked: it no longer authenticates.")
