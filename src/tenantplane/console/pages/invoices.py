"""Invoices: the list with the current period's usage chart, the detail with its line items,
the receipt (a redirect to the provider-hosted PDF) and the payment portal (admins)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from fastapi.responses import HTMLResponse, RedirectResponse, Response

from tenantplane.console.api import ApiAnswer
from tenantplane.console.usage import (
    PHASE_CHANGED,
    DailyUsage,
    current_period,
    daily_usage,
    instant,
    listed_clusters,
    phase_changes,
    rfc3339,
)
from tenantplane.console.usage_chart import Chart, hours_text, layout
from tenantplane.console.web import PAGE_HEADERS, Page, PageDep
from tenantplane.http.routers import PrefixedRouter

router = PrefixedRouter(prefix="/console/t/{tenant}/invoices", include_in_schema=False)

# Phases whose invoice was charged: only they can have a receipt (docs/billing.md).
CHARGED_PHASES = frozenset({"Paid", "PastDue"})
# The chart reads at most this many pages of 1,000 phase changes (a month of a large tenant
# fits many times over); beyond, it says that it is incomplete.
MAX_EVENT_PAGES = 20
# The receipt and portal links are short-lived credentials of the provider's: never cached.
NOT_STORED = {**PAGE_HEADERS, "Cache-Control": "no-store"}


def _path(page: Page, name: str = "") -> str:
    base = f"/tenants/{quote(page.tenant)}/invoices"
    return f"{base}/{quote(name)}" if name else base


@dataclass(frozen=True)
class UsageView:
    """The usage section: the chart and its data, or why there is none."""

    usage: DailyUsage | None
    chart: Chart | None
    failure: ApiAnswer | None
    incomplete: bool


async def _phase_changes_since(page: Page, since: datetime) -> tuple[ApiAnswer, list[Any], bool]:
    """Every ``cluster.phase_changed`` event since ``since``, walking the pages."""
    params = {
        "type": "platform",
        "kind": "cluster",
        "action": PHASE_CHANGED,
        "since": rfc3339(since),
        "limit": "1000",
    }
    found: list[Any] = []
    for _ in range(MAX_EVENT_PAGES):
        answer = await page.api.get(f"/tenants/{quote(page.tenant)}/events", params)
        if not answer.ok:
            return answer, found, False
        found.extend(answer.body.get("items", []))
        token = answer.body.get("continue")
        if not token:
            return answer, found, False
        params = {**params, "continue": str(token)}
    return answer, found, True


async def _usage(page: Page, invoices: list[dict[str, Any]]) -> UsageView:
    now = datetime.now(UTC)
    period = current_period(now, (instant(item["billingPeriod"]["end"]) for item in invoices))
    clusters = await page.api.get(f"/tenants/{quote(page.tenant)}/clusters", {"limit": "1000"})
    if not clusters.ok:
        return UsageView(None, None, clusters, False)
    events, items, incomplete = await _phase_changes_since(page, period.start)
    if not events.ok:
        return UsageView(None, None, events, False)
    usage = daily_usage(
        period, now, listed_clusters(clusters.body.get("items", [])), phase_changes(items)
    )
    return UsageView(usage, layout(usage), None, incomplete)


async def _list(page: Page, *, status: int = 200, portal_error: str | None = None) -> HTMLResponse:
    answer = await page.api.get(_path(page))
    items: list[dict[str, Any]] = answer.body.get("items", []) if answer.ok else []
    usage = await _usage(page, items) if answer.ok else None
    return page.render(
        "invoices/list.html",
        status=status,
        answer=answer,
        # Newest first: the list the API gives is ordered by billing period.
        items=list(reversed(items)),
        view=usage,
        hours_text=hours_text,
        portal_error=portal_error,
    )


@router.get("")
async def list_invoices(page: PageDep) -> HTMLResponse:
    return await _list(page)


@router.post("/portal")
async def open_portal(page: PageDep) -> Response:
    """A fresh session of the payment provider's portal (admins; the API refuses others)."""
    answer = await page.api.call("POST", f"/tenants/{quote(page.tenant)}/billing/portal-session")
    url = answer.body.get("overviewURL") if answer.ok else None
    if not isinstance(url, str) or not url.startswith("https://"):
        message = answer.error if not answer.ok else "the payment provider gave no portal link"
        return await _list(
            page, status=answer.status if not answer.ok else 502, portal_error=message
        )
    return RedirectResponse(url, status_code=303, headers=NOT_STORED)


async def _detail(
    page: Page, name: str, *, status: int = 200, receipt_error: str | None = None
) -> HTMLResponse:
    answer = await page.api.get(_path(page, name))
    if not answer.ok:
        return page.message("Invoice", answer.error, answer.status, "invoices")
    invoice = answer.body
    has_receipt = invoice["status"]["phase"] in CHARGED_PHASES and bool(
        invoice.get("providerTransactionID")
    )
    return page.render(
        "invoices/detail.html",
        status=status,
        invoice=invoice,
        has_receipt=has_receipt,
        receipt_error=receipt_error,
    )


@router.get("/{name}")
async def invoice_detail(page: PageDep, name: str) -> HTMLResponse:
    return await _detail(page, name)


@router.get("/{name}/receipt")
async def download_receipt(page: PageDep, name: str) -> Response:
    """To the provider-hosted PDF: the API hands out a fresh, short-lived link on each call,
    so the console asks at the click and stores nothing."""
    answer = await page.api.get(f"{_path(page, name)}/receipt")
    url = answer.body.get("url") if answer.ok else None
    if not isinstance(url, str) or not url.startswith("https://"):
        message = answer.error if not answer.ok else "the payment provider gave no receipt link"
        return await _detail(
            page, name, status=answer.status if not answer.ok else 502, receipt_error=message
        )
    return RedirectResponse(url, status_code=303, headers=NOT_STORED)
