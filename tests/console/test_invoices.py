"""The invoices pages: the list (with this period's usage chart), the detail with its line
items and conditions, the receipt (a redirect to the provider's PDF, or the API's reason
why there is none) and the payment portal (admins; a readonly member's forged POST is
refused by the API). Invoices are issued by `tenantplane billing run` and charged through
the loopback fake of Paddle, as tests/billing does."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import httpx
from fastapi import FastAPI
from markupsafe import escape

from tenantplane.db.engine import Database
from tenantplane.member.models import Role
from tests.billing.conftest import (  # noqa: F401 (fixtures)
    BillingFactoryFn,
    billing,
    paddle,
    paddle_overrides,
    plans_file,
)
from tests.billing.test_paddle import SEPTEMBER_END, september_tenant
from tests.billing.test_webhooks import all_events_applied, billed_invoice, deliver
from tests.cluster.polling import wait_running
from tests.console.session import console_session
from tests.factories import Factory
from tests.fakes.paddle import INVOICE_HOST, PORTAL_HOST, FakePaddle
from tests.http_client import bearer

PORTAL_BUTTON = "Open the payment portal"


async def test_the_list_and_the_detail_show_the_invoice_and_its_line_items(
    billing: BillingFactoryFn,  # noqa: F811
    factory: Factory,
) -> None:
    deployment = await billing()
    tenant = await september_tenant(factory)
    web = factory.cluster(tenant.id, "web")
    await web.record(datetime(2026, 9, 10, tzinfo=UTC), "created", phase="Running")
    await web.record(datetime(2026, 9, 11, tzinfo=UTC), "deleted", phase="Deleted")
    async with console_session(deployment.app, tenant.name, tenant.admin_email) as console:
        empty = await console.get("invoices")
        assert empty.status_code == 200
        assert "No invoices yet" in empty.text

        await deployment.run(SEPTEMBER_END)
        name = f"{tenant.name}-20260901"
        listed = await console.get("invoices")
        row = re.search(rf'<tr data-invoice="{name}">(.*?)</tr>', listed.text, re.S)
        assert row is not None
        assert "2026-09-01</time> to" in row.group(1)
        assert "2026-10-01</time>" in row.group(1)
        assert 'class="badge info">Draft' in row.group(1)
        # 30.00 of platform fee and 24 hours of 1 vCPU, 1 GiB and 10 GiB.
        assert "31.13 EUR" in row.group(1)

        detail = await console.get(f"invoices/{name}")
        assert detail.status_code == 200
        lines = dict(re.findall(r'<tr data-line="([^"]+)">(.*?)</tr>', detail.text, re.S))
        assert set(lines) == {"platform", "cpu", "memory", "storage", "observability.metrics"}
        assert "<td>web</td>" in lines["cpu"]
        assert "24.000000" in lines["cpu"]
        assert "<td>0.96</td>" in lines["cpu"]
        assert "ObservabilityDegraded" in detail.text
        assert "NoUsageSource" in detail.text
        # Draft: not charged, so no receipt is offered, and asking anyway shows why.
        assert "Download the receipt" not in detail.text
        refused = await console.get(f"invoices/{name}/receipt")
        assert refused.status_code == 409
        assert "No receipt: " in refused.text
        assert "invoice" in refused.text

        unknown = await console.get(f"invoices/{tenant.name}-20200101")
        assert unknown.status_code == 404


async def test_a_paid_invoices_receipt_redirects_to_the_providers_pdf(
    billing: BillingFactoryFn,  # noqa: F811
    factory: Factory,
    paddle: FakePaddle,  # noqa: F811
    database: Database,
) -> None:
    deployment, tenant, invoice = await billed_invoice(billing, factory, paddle)
    name = invoice["name"]
    await factory.member(tenant.id, "viewer@example.com", Role.readonly)
    async with console_session(deployment.app, tenant.name, "viewer@example.com") as console:
        billed = await console.get(f"invoices/{name}")
        assert 'class="badge info">Billed' in billed.text
        assert "Download the receipt" not in billed.text

        paid = paddle.settle(invoice["providerTransactionID"], "completed")
        await deliver(deployment, paddle, paddle.event("transaction.completed", paid))
        await all_events_applied(database)
        detail = await console.get(f"invoices/{name}")
        assert 'class="badge ok">Paid' in detail.text
        assert f'href="/console/t/{tenant.name}/invoices/{name}/receipt"' in detail.text

        first = await console.get(f"invoices/{name}/receipt")
        second = await console.get(f"invoices/{name}/receipt")
        assert first.status_code == 303
        assert first.headers["location"].startswith(f"{INVOICE_HOST}/invoices/")
        assert first.headers["cache-control"] == "no-store"
        # Asked for at each click: a fresh link from the provider every time.
        assert second.headers["location"] != first.headers["location"]

        paddle.fail_next(500, "internal_error")
        failed = await console.get(f"invoices/{name}/receipt")
        assert failed.status_code == 502
        assert "No receipt: " in failed.text

    unconfigured = await billing()
    async with console_session(unconfigured.app, tenant.name, tenant.admin_email) as console:
        answer = await unconfigured.client.get(
            f"{tenant.path}/invoices/{name}/receipt", headers=bearer(tenant.admin_key)
        )
        assert answer.status_code == 503
        shown = await console.get(f"invoices/{name}/receipt")
        assert shown.status_code == 503
        assert str(escape(answer.json()["message"])) in shown.text


async def test_an_admin_opens_the_payment_portal(
    billing: BillingFactoryFn,  # noqa: F811
    factory: Factory,
    paddle: FakePaddle,  # noqa: F811
) -> None:
    deployment = await billing(**paddle_overrides(paddle))
    tenant = await factory.tenant()
    async with console_session(deployment.app, tenant.name, tenant.admin_email) as console:
        listed = await console.get("invoices")
        assert PORTAL_BUTTON in listed.text
        # No billing profile yet: the API's reason, on the page.
        missing = await console.post("invoices/portal")
        assert missing.status_code == 409
        assert "Could not open the payment portal" in missing.text

        customer, _ = paddle.add_customer()
        await factory.billing.link(tenant.name, customer)
        opened = await console.post("invoices/portal")
        assert opened.status_code == 303
        assert opened.headers["location"].startswith(f"{PORTAL_HOST}/")
        assert opened.headers["cache-control"] == "no-store"
        assert len(paddle.calls("POST", f"/customers/{customer}/portal-sessions")) == 1
        # A state change: without the page's CSRF token nothing is asked of the provider.
        assert (await console.post("invoices/portal", csrf=False)).status_code == 403
        assert len(paddle.calls("POST", f"/customers/{customer}/portal-sessions")) == 1


async def test_without_a_payment_provider_the_portal_says_billing_is_not_configured(
    billing: BillingFactoryFn,  # noqa: F811
    factory: Factory,
) -> None:
    deployment = await billing()
    tenant = await factory.tenant()
    answer = await deployment.client.post(
        f"{tenant.path}/billing/portal-session", headers=bearer(tenant.admin_key)
    )
    assert answer.status_code == 503
    async with console_session(deployment.app, tenant.name, tenant.admin_email) as console:
        shown = await console.post("invoices/portal")
        assert shown.status_code == 503
        assert str(escape(answer.json()["message"])) in shown.text


async def test_a_readonly_member_has_no_portal_button_and_a_forged_post_is_refused(
    billing: BillingFactoryFn,  # noqa: F811
    factory: Factory,
    paddle: FakePaddle,  # noqa: F811
) -> None:
    deployment = await billing(**paddle_overrides(paddle))
    tenant = await factory.tenant()
    customer, _ = paddle.add_customer()
    await factory.billing.link(tenant.name, customer)
    await factory.member(tenant.id, "viewer@example.com", Role.readonly)
    async with console_session(deployment.app, tenant.name, "viewer@example.com") as console:
        listed = await console.get("invoices")
        assert listed.status_code == 200
        assert "read-only" in listed.text
        assert PORTAL_BUTTON not in listed.text
        assert "Usage this billing period" in listed.text
        forged = await console.post("invoices/portal")
        assert forged.status_code == 403
        assert "admin access required" in forged.text
        assert "location" not in forged.headers
    assert paddle.calls("POST", f"/customers/{customer}/portal-sessions") == []


async def test_the_usage_chart_shows_a_running_cluster(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        before = await console.get("invoices")
        assert "No cluster was running this period yet." in before.text
        assert "<svg viewBox" not in before.text

        assert (await console.post("clusters", {"name": "web"})).status_code == 303
        await wait_running(client, tenant.path, tenant.admin_key, "web")
        chart = await console.get("invoices")
    html = chart.text
    assert '<svg viewBox="0 0 480.0 260.0" role="img"' in html
    assert 'aria-labelledby="usage-title usage-desc"' in html
    month = datetime.now(UTC).strftime("%B %Y")
    assert f'<title id="usage-title">Metered cluster-hours per day, {month}</title>' in html
    desc = re.search(r'<desc id="usage-desc">([^<]+)</desc>', html)
    assert desc is not None
    assert "web" in desc.group(1)
    # One bar today, with the legend naming its colour and the data table as the fallback.
    bars = re.findall(
        r'<rect x="[^"]+" y="[^"]+" width="[^"]+" height="[^"]+" fill="#4e79a7">', html
    )
    assert len(bars) == 1
    assert re.search(r'fill="#4e79a7"/></svg>web \(', html)
    table = re.search(r"<details>\s*<summary>Data table</summary>(.*?)</details>", html, re.S)
    assert table is not None
    assert '<th scope="col">web</th>' in table.group(1)
    today = datetime.now(UTC).date().isoformat()
    assert f'<th scope="row">{today}</th>' in table.group(1)
