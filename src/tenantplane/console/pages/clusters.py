"""Clusters: the list (live), create, detail, upgrade, resize, kubeconfig and delete."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import yaml
from fastapi.responses import HTMLResponse, Response

from tenantplane.console.api import ApiAnswer
from tenantplane.console.web import PAGE_HEADERS, AdminPageDep, Page, PageDep, field_errors
from tenantplane.http.routers import PrefixedRouter

router = PrefixedRouter(prefix="/console/t/{tenant}/clusters", include_in_schema=False)

# Phases in which nothing changes by itself: the live list stops polling.
SETTLED_PHASES = frozenset({"Running", "Failed"})


def _path(page: Page, name: str = "") -> str:
    base = f"/tenants/{quote(page.tenant)}/clusters"
    return f"{base}/{quote(name)}" if name else base


async def _listed(page: Page) -> ApiAnswer:
    answer = await page.api.get(_path(page), {"limit": "1000"})
    return answer


def _settled(items: list[dict[str, Any]]) -> bool:
    return all(
        item["status"]["phase"] in SETTLED_PHASES
        and item["status"]["haPhase"] in ("", "Ready", "Disabled")
        for item in items
    )


@router.get("")
async def list_clusters(page: PageDep) -> HTMLResponse:
    answer = await _listed(page)
    items = answer.body.get("items", []) if answer.ok else []
    return page.render("clusters/list.html", answer=answer, items=items, settled=_settled(items))


@router.get("/-/rows")
async def cluster_rows(page: PageDep) -> HTMLResponse:
    """The list's table alone, polled by the page while a cluster is changing."""
    answer = await _listed(page)
    items = answer.body.get("items", []) if answer.ok else []
    return page.render("clusters/rows.html", answer=answer, items=items, settled=_settled(items))


async def _create_form(
    page: Page, values: dict[str, Any], answer: ApiAnswer | None
) -> HTMLResponse:
    versions = await page.api.get("/versions", {"limit": "1000"})
    plans = await page.api.get("/plans", {"limit": "1000"})
    tenant = await page.api.get(f"/tenants/{quote(page.tenant)}")
    plan_name = tenant.body.get("plan") if tenant.ok else None
    plan = next(
        (
            item
            for item in (plans.body.get("items", []) if plans.ok else [])
            if item["name"] == plan_name
        ),
        None,
    )
    return page.render(
        "clusters/new.html",
        status=answer.status if answer is not None else 200,
        versions=versions.body if versions.ok else {"items": [], "default": ""},
        plan=plan,
        values=values,
        errors=field_errors(answer) if answer is not None else {},
    )


@router.get("/-/new")
async def new_cluster(page: AdminPageDep) -> HTMLResponse:
    return await _create_form(page, {}, None)


def _resources(form: dict[str, str]) -> dict[str, str] | None:
    resources = {
        key: form[key].strip() for key in ("cpu", "memory", "storage") if form.get(key, "").strip()
    }
    return resources or None


@router.post("")
async def create_cluster(page: PageDep) -> Response:
    form = {key: str(value) for key, value in page.form.items()}
    body: dict[str, Any] = {
        "name": form.get("name", "").strip(),
        "highAvailability": form.get("highAvailability") == "on",
    }
    if form.get("version"):
        body["version"] = form["version"]
    resources = _resources(form)
    if resources:
        body["resources"] = resources
    answer = await page.api.call("POST", _path(page), json=body)
    if not answer.ok:
        return await _create_form(page, form, answer)
    return page.redirect(
        f"clusters/{quote(body['name'])}", f"Cluster {body['name']} is being created."
    )


async def _detail(page: Page, name: str, *, status: int = 200, errors: Any = None) -> HTMLResponse:
    answer = await page.api.get(_path(page, name))
    if not answer.ok:
        return page.message("Cluster", answer.error, answer.status, "clusters")
    cluster = answer.body
    versions = await page.api.get("/versions", {"limit": "1000"})
    upgrades = _next_minor(
        cluster["version"], versions.body.get("items", []) if versions.ok else []
    )
    connection = None
    if cluster["status"]["phase"] == "Running":
        details = await page.api.get(f"{_path(page, name)}/connection-details")
        connection = details.body if details.ok else None
    return page.render(
        "clusters/detail.html",
        status=status,
        cluster=cluster,
        etag=answer.headers.get("etag", ""),
        upgrades=upgrades,
        connection=connection,
        errors=errors or {},
    )


def _minor(version: str) -> tuple[int, int] | None:
    parts = version.lstrip("v").split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


def _next_minor(current: str, versions: list[dict[str, Any]]) -> list[str]:
    """The versions one minor above ``current`` (an upgrade moves one minor at a time)."""
    now = _minor(current)
    if now is None:
        return []
    return [
        item["version"]
        for item in versions
        if (found := _minor(item["version"])) is not None and found == (now[0], now[1] + 1)
    ]


@router.get("/{name}")
async def cluster_detail(page: PageDep, name: str) -> HTMLResponse:
    return await _detail(page, name)


async def _patch(page: Page, name: str, body: dict[str, Any], done: str) -> Response:
    etag = str(page.form.get("etag", ""))
    headers = {"If-Match": etag} if etag else None
    answer = await page.api.call("PATCH", _path(page, name), json=body, headers=headers)
    if not answer.ok:
        return await _detail(page, name, status=answer.status, errors=field_errors(answer))
    return page.redirect(f"clusters/{quote(name)}", done)


@router.post("/{name}/upgrade")
async def upgrade_cluster(page: PageDep, name: str) -> Response:
    version = str(page.form.get("version", ""))
    return await _patch(page, name, {"version": version}, f"Upgrade to {version} started.")


@router.post("/{name}/resize")
async def resize_cluster(page: PageDep, name: str) -> Response:
    form = {key: str(value) for key, value in page.form.items()}
    return await _patch(page, name, {"resources": _resources(form) or {}}, "Resize requested.")


@router.post("/{name}/delete")
async def delete_cluster(page: PageDep, name: str) -> Response:
    if str(page.form.get("confirm", "")) != name:
        return await _detail(
            page, name, status=400, errors={"confirm": f"type {name} to confirm the deletion"}
        )
    answer = await page.api.call("DELETE", _path(page, name))
    if not answer.ok:
        return await _detail(page, name, status=answer.status, errors=field_errors(answer))
    return page.redirect("clusters", f"Cluster {name} is being deleted.")


@router.post("/{name}/kubeconfig")
async def download_kubeconfig(page: PageDep, name: str) -> Response:
    """A kubeconfig holding a fresh token of the viewer's own (valid one hour by default)."""
    details = await page.api.get(f"{_path(page, name)}/connection-details")
    if not details.ok:
        return await _detail(page, name, status=details.status, errors=field_errors(details))
    issued = await page.api.call("POST", f"{_path(page, name)}/credentials", json={})
    if not issued.ok:
        return await _detail(page, name, status=issued.status, errors=field_errors(issued))
    context = f"{page.tenant}-{name}"
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": context,
                "cluster": {
                    "server": details.body["endpoint"],
                    "certificate-authority-data": details.body["certificateAuthority"],
                },
            }
        ],
        "users": [{"name": context, "user": {"token": issued.body["token"]}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        "current-context": context,
    }
    return Response(
        yaml.safe_dump(document, sort_keys=False),
        media_type="application/yaml",
        headers={
            **PAGE_HEADERS,
            "Content-Disposition": f'attachment; filename="{context}.kubeconfig"',
        },
    )
