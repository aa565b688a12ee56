"""Secrets: the list (live), create with sync target rows, detail with each target's sync
status (live), replacing the targets (If-Match) and a typed delete."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from fastapi.responses import HTMLResponse, Response
from starlette.datastructures import FormData

from tenantplane.console.api import ApiAnswer
from tenantplane.console.web import AdminPageDep, Page, PageDep, field_errors
from tenantplane.http.routers import PrefixedRouter

router = PrefixedRouter(prefix="/console/t/{tenant}/secrets", include_in_schema=False)

# Phases in which nothing changes by itself: the live parts stop polling.
SETTLED_PHASES = frozenset({"Synced", "Failed"})
# Blank target rows offered beyond those filled in (blank rows are ignored when posted).
BLANK_TARGET_ROWS = 3
# The API takes at most 100 targets; a posted row index beyond this is not a row of ours.
MAX_TARGET_ROWS = 200
TARGET_FIELDS = ("cluster", "namespace", "secretName")
_TARGET_INPUT = re.compile(r"^sync\[(\d{1,3})\]\.(cluster|namespace|secretName)$")
_TARGET_REFERENCE = re.compile(r"sync\[(\d+)\]")

Row = dict[str, str]


def _path(page: Page, name: str = "") -> str:
    base = f"/tenants/{quote(page.tenant)}/secrets"
    return f"{base}/{quote(name)}" if name else base


def _settled(secrets: list[dict[str, Any]]) -> bool:
    """Settled when the sync controller has acted on every secret's current targets."""
    return all(
        secret["status"]["phase"] in SETTLED_PHASES
        and all(
            condition.get("reason") != "Reconciling"
            for condition in secret["status"]["conditions"]
            if condition.get("type") == "Ready"
        )
        for secret in secrets
    )


async def _listed(page: Page) -> ApiAnswer:
    answer = await page.api.get(_path(page), {"limit": "1000"})
    return answer


@router.get("")
async def list_secrets(page: PageDep) -> HTMLResponse:
    answer = await _listed(page)
    items = answer.body.get("items", []) if answer.ok else []
    return page.render("secrets/list.html", answer=answer, items=items, settled=_settled(items))


@router.get("/-/rows")
async def secret_rows(page: PageDep) -> HTMLResponse:
    """The list's table alone, polled by the page while a secret is syncing."""
    answer = await _listed(page)
    items = answer.body.get("items", []) if answer.ok else []
    return page.render("secrets/rows.html", answer=answer, items=items, settled=_settled(items))


def _posted_rows(form: FormData) -> list[Row]:
    """The target rows as posted (``sync[i].cluster`` …), in row order, blank ones too."""
    rows: dict[int, Row] = {}
    for key, value in form.multi_items():
        found = _TARGET_INPUT.match(key)
        if found and int(found.group(1)) < MAX_TARGET_ROWS:
            rows.setdefault(int(found.group(1)), {})[found.group(2)] = str(value).strip()
    return [rows[index] for index in sorted(rows)]


def _targets(rows: list[Row]) -> tuple[list[dict[str, str]], list[int]]:
    """The API's sync list from the filled rows, and the row each target came from."""
    targets: list[dict[str, str]] = []
    origins: list[int] = []
    for position, row in enumerate(rows):
        if not any(row.values()):
            continue
        target = {"cluster": row.get("cluster", ""), "namespace": row.get("namespace", "")}
        if row.get("secretName"):
            target["secretName"] = row["secretName"]
        targets.append(target)
        origins.append(position)
    return targets, origins


def _row_errors(answer: ApiAnswer, origins: list[int]) -> dict[str, str]:
    """The API's errors with ``sync[i]`` (the i-th target sent) renamed after its form row,
    as blank rows were left out: the error then shows at the row the person filled in."""

    def row_of(reference: re.Match[str]) -> int | None:
        index = int(reference.group(1))
        return origins[index] if index < len(origins) else None

    def readable(reference: re.Match[str]) -> str:
        row = row_of(reference)
        return f"target {row + 1}" if row is not None else reference.group(0)

    errors: dict[str, str] = {}
    for field, message in field_errors(answer).items():
        found = _TARGET_REFERENCE.match(field)
        row = row_of(found) if found else None
        if found and row is not None:
            field = f"sync[{row}]{field[found.end() :]}"
        errors[field] = _TARGET_REFERENCE.sub(readable, message)
    return errors


def _with_blanks(rows: list[Row]) -> list[Row]:
    """The rows (trailing blank ones dropped: they carry no error) and fresh blank ones."""
    filled = list(rows)
    while filled and not any(filled[-1].values()):
        filled.pop()
    return filled + [dict.fromkeys(TARGET_FIELDS, "") for _ in range(BLANK_TARGET_ROWS)]


def _shown_fields(rows: list[Row]) -> list[str]:
    """Fields the target rows show errors at (``ui.form_error`` shows the others)."""
    return [
        f"sync[{index}]{suffix}"
        for index in range(len(rows))
        for suffix in ("", ".cluster", ".namespace", ".secretName")
    ]


async def _cluster_names(page: Page) -> list[str]:
    """Suggestions for the cluster field (the API checks the name anyway)."""
    clusters = await page.api.get(f"/tenants/{quote(page.tenant)}/clusters", {"limit": "1000"})
    return [item["name"] for item in clusters.body.get("items", [])] if clusters.ok else []


async def _create_form(
    page: Page, values: Mapping[str, str], rows: list[Row], errors: Mapping[str, str], status: int
) -> HTMLResponse:
    return page.render(
        "secrets/new.html",
        status=status,
        values=values,
        rows=rows,
        errors=errors,
        known=["name", "secretPath", *_shown_fields(rows)],
        clusters=await _cluster_names(page),
    )


@router.get("/-/new")
async def new_secret(page: AdminPageDep) -> HTMLResponse:
    return await _create_form(page, {}, _with_blanks([]), {}, 200)


@router.post("")
async def create_secret(page: PageDep) -> Response:
    values = {key: str(page.form.get(key, "")).strip() for key in ("name", "secretPath")}
    rows = _posted_rows(page.form)
    targets, origins = _targets(rows)
    body = {**values, "sync": targets}
    answer = await page.api.call("POST", _path(page), json=body)
    if not answer.ok:
        errors = _row_errors(answer, origins)
        return await _create_form(page, values, _with_blanks(rows), errors, answer.status)
    return page.redirect(
        f"secrets/{quote(values['name'])}", f"Secret {values['name']} was created."
    )


def _target_statuses(secret: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each target with its sync status entry as the API reports it (``{}``: none yet)."""
    statuses = {
        (entry.get("cluster"), entry.get("namespace"), entry.get("secretName")): entry
        for entry in secret["status"]["syncStatuses"]
    }
    return [
        {
            **target,
            "status": statuses.get(
                (target["cluster"], target["namespace"], target["secretName"]), {}
            ),
        }
        for target in secret["sync"]
    ]


async def _read(page: Page, name: str) -> ApiAnswer:
    answer = await page.api.get(_path(page, name))
    return answer


def _targets_digest(targets: list[Any]) -> str:
    """The targets an edit form was read with, as the form carries them back."""
    canonical = json.dumps(targets, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _not_found(page: Page, answer: ApiAnswer) -> HTMLResponse:
    return page.message("Secret", answer.error, answer.status, "secrets")


async def _detail(
    page: Page,
    name: str,
    *,
    status: int = 200,
    errors: Mapping[str, str] | None = None,
    rows: list[Row] | None = None,
    changed_meanwhile: bool = False,
) -> HTMLResponse:
    answer = await _read(page, name)
    if not answer.ok:
        return _not_found(page, answer)
    secret = answer.body
    # After a refused edit the rows as posted, so nothing typed is lost; else the current.
    shown = _with_blanks(rows if rows is not None else [dict(target) for target in secret["sync"]])
    return page.render(
        "secrets/detail.html",
        status=status,
        answer=answer,
        secret=secret,
        targets=_target_statuses(secret),
        settled=_settled([secret]),
        etag=answer.headers.get("etag", ""),
        targets_digest=_targets_digest(secret["sync"]),
        rows=shown,
        errors=errors or {},
        known=["confirm", *_shown_fields(shown)],
        changed_meanwhile=changed_meanwhile,
        clusters=await _cluster_names(page) if page.viewer.is_admin else [],
    )


@router.get("/{name}")
async def secret_detail(page: PageDep, name: str) -> HTMLResponse:
    return await _detail(page, name)


@router.get("/{name}/status")
async def secret_status(page: PageDep, name: str) -> HTMLResponse:
    """The conditions and the targets' sync status alone, polled while syncing."""
    answer = await _read(page, name)
    if not answer.ok:
        return page.render("secrets/status.html", answer=answer, settled=True)
    return page.render(
        "secrets/status.html",
        answer=answer,
        secret=answer.body,
        targets=_target_statuses(answer.body),
        settled=_settled([answer.body]),
    )


@router.post("/{name}/targets")
async def replace_targets(page: PageDep, name: str) -> Response:
    rows = _posted_rows(page.form)
    targets, origins = _targets(rows)
    etag = str(page.form.get("etag", ""))
    answer = await _patch_targets(page, name, targets, etag)
    read_with = str(page.form.get("targets_digest", ""))
    if answer.status == 412 and read_with:
        # The ETag moves with every new sync status too, which the page shows arriving live:
        # when the targets are still those the form was read with, saving overwrites nothing
        # unseen, so it is done again under the current ETag (a 412 again if they change).
        current = await _read(page, name)
        if current.ok and _targets_digest(current.body["sync"]) == read_with:
            answer = await _patch_targets(page, name, targets, current.headers.get("etag", ""))
    if answer.status == 412:
        # Someone changed the targets since the form was read: show the current ones
        # instead of writing over a change nobody has seen.
        return await _detail(page, name, status=412, changed_meanwhile=True)
    if not answer.ok:
        errors = _row_errors(answer, origins)
        return await _detail(page, name, status=answer.status, errors=errors, rows=rows)
    return page.redirect(f"secrets/{quote(name)}", "Sync targets saved.")


async def _patch_targets(page: Page, name: str, targets: list[Any], etag: str) -> ApiAnswer:
    headers = {"If-Match": etag} if etag else None
    answer = await page.api.call(
        "PATCH", _path(page, name), json={"sync": targets}, headers=headers
    )
    return answer


@router.post("/{name}/delete")
async def delete_secret(page: PageDep, name: str) -> Response:
    if str(page.form.get("confirm", "")) != name:
        errors = {"confirm": f"type {name} to confirm the deletion"}
        return await _detail(page, name, status=400, errors=errors)
    answer = await page.api.call("DELETE", _path(page, name))
    if not answer.ok:
        return await _detail(page, name, status=answer.status, errors=field_errors(answer))
    return page.redirect(
        "secrets", f"Secret {name} is being deleted; its copies are removed from the clusters."
    )
