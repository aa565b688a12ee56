"""Members: the list, invite, change of role and removal, each refusal shown beside the
action it answers (the API keeps at least one admin in every tenant)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from fastapi.responses import HTMLResponse, Response

from tenantplane.console.api import ApiAnswer
from tenantplane.console.web import Page, PageDep, field_errors
from tenantplane.http.routers import PrefixedRouter

router = PrefixedRouter(prefix="/console/t/{tenant}/members", include_in_schema=False)

ROLES = ("admin", "readonly")
# The API's code when a change would leave the tenant without an admin (member/service.py).
LAST_ADMIN = "LAST_ADMIN"
LAST_ADMIN_EXPLANATION = "A tenant keeps at least one admin: make another member admin first."


@dataclass(frozen=True)
class RowRefusal:
    """An action on one member's row that the API refused, shown in that row."""

    email: str
    action: str
    explanation: str
    message: str


def _path(page: Page, email: str = "") -> str:
    base = f"/tenants/{quote(page.tenant)}/members"
    return f"{base}/{quote(email, safe='')}" if email else base


async def _list(
    page: Page,
    *,
    status: int = 200,
    errors: Mapping[str, str] | None = None,
    values: Mapping[str, str] | None = None,
    refusal: RowRefusal | None = None,
) -> HTMLResponse:
    answer = await page.api.get(_path(page), {"limit": "1000"})
    items: list[dict[str, Any]] = answer.body.get("items", []) if answer.ok else []
    return page.render(
        "members/list.html",
        status=status,
        answer=answer,
        items=items,
        more=answer.ok and bool(answer.body.get("continue")),
        roles=ROLES,
        errors=errors or {},
        values=values or {"role": "readonly"},
        refusal=refusal,
    )


@router.get("")
async def list_members(page: PageDep) -> HTMLResponse:
    return await _list(page)


@router.post("")
async def invite_member(page: PageDep) -> Response:
    values = {key: str(page.form.get(key, "")).strip() for key in ("email", "role")}
    answer = await page.api.call("POST", _path(page), json=values)
    if not answer.ok:
        return await _list(page, status=answer.status, errors=field_errors(answer), values=values)
    email = answer.body.get("email", values["email"])
    return page.redirect("members", f"{email} was added as {answer.body.get('role', '')}.")


def _row_refusal(email: str, action: str, answer: ApiAnswer) -> RowRefusal:
    explanation = LAST_ADMIN_EXPLANATION if answer.code == LAST_ADMIN else ""
    return RowRefusal(email, action, explanation, answer.error)


@router.post("/role")
async def change_role(page: PageDep) -> Response:
    email = str(page.form.get("email", "")).strip()
    role = str(page.form.get("role", ""))
    if not email:
        return await _list(page, status=400, errors={"": "no member was named"})
    answer = await page.api.call("PATCH", _path(page, email), json={"role": role})
    if not answer.ok:
        refusal = _row_refusal(email, "role", answer)
        return await _list(page, status=answer.status, refusal=refusal)
    return page.redirect("members", f"{email} is now {answer.body.get('role', role)}.")


@router.post("/remove")
async def remove_member(page: PageDep) -> Response:
    email = str(page.form.get("email", "")).strip()
    if not email:
        return await _list(page, status=400, errors={"": "no member was named"})
    answer = await page.api.call("DELETE", _path(page, email))
    if not answer.ok:
        refusal = _row_refusal(email, "remove", answer)
        return await _list(page, status=answer.status, refusal=refusal)
    return page.redirect("members", f"{email} was removed from {page.tenant}.")
