"""Charges, receipts and portal sessions through the official Paddle SDK, against the
loopback fake of Paddle's API (tests/fakes/paddle.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from tenantplane.billing.models import Invoice
from tenantplane.db.engine import Database
from tests.billing.conftest import DEADLINE_SECONDS, Billing, BillingFactoryFn, paddle_overrides
from tests.conftest import make_settings
from tests.factories import Factory, TenantFixture
from tests.fakes.paddle import INVOICE_HOST, PORTAL_HOST, FakePaddle
from tests.http_client import api_client, bearer, running_app

SEPTEMBER_END = "2026-10-01T00:00:00Z"


async def september_tenant(factory: Factory, paddle: FakePaddle | None = None) -> TenantFixture:
    """A tenant billed for September 2026 only: 30.00 of platform fee, no usage."""
    tenant = await factory.tenant()
    await factory.billing.backdate_tenant(tenant.id, datetime(2026, 9, 1, tzinfo=UTC))
    if paddle is not None:
        customer, _ = paddle.add_customer()
        address = paddle.state.addresses[customer][0]["id"]
        await factory.billing.link(tenant.name, customer, address_id=address)
    return tenant


async def only_invoice(deployment: Billing, tenant: TenantFixture) -> dict[str, Any]:
    response = await deployment.client.get(
        f"{tenant.path}/invoices", headers=bearer(tenant.admin_key)
    )
    [invoice] = response.json()["items"]
    return dict(invoice)


async def test_billing_run_charges_the_net_amount_once(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle
) -> None:
    deployment = await billing(**paddle_overrides(paddle))
    tenant = await september_tenant(factory, paddle)
    await deployment.cli("tenant", "credit", tenant.name, "5.00")

    report = await deployment.run(SEPTEMBER_END)
    assert report["chargesAttempted"] == 1
    invoice = await only_invoice(deployment, tenant)
    assert invoice["status"]["phase"] == "Billed"
    assert invoice["status"]["subtotal"] == "30.00"
    assert invoice["status"]["creditsApplied"] == "5.00"
    [call] = paddle.calls("POST", "/transactions")
    assert invoice["providerTransactionID"] in paddle.state.transactions
    assert call.headers["Authorization"] == f"Bearer {paddle.api_key}"
    body = call.body
    assert body["status"] == "billed"
    assert body["collection_mode"] == "manual"
    assert body["currency_code"] == "EUR"
    assert body["billing_period"] == {
        "starts_at": "2026-09-01T00:00:00.000000Z",
        "ends_at": "2026-10-01T00:00:00.000000Z",
    }
    [item] = body["items"]
    # The net charge (30.00 - 5.00) in the lowest currency unit, as one non-catalogue item.
    assert item["price"]["unit_price"] == {"amount": "2500", "currency_code": "EUR"}
    assert item["quantity"] == 1
    assert body["custom_data"]["invoice"] == invoice["name"]
    # Paddle numbers billed transactions, but the number is shown once the invoice is paid.
    assert invoice["status"]["providerInvoiceNumber"] == ""

    again = await deployment.run(SEPTEMBER_END)
    assert again == {"issued": [], "chargesAttempted": 0}
    assert len(paddle.calls("POST", "/transactions")) == 1


async def test_zero_value_charge_is_paid_at_once_and_hosts_no_receipt(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle
) -> None:
    deployment = await billing(**paddle_overrides(paddle))
    tenant = await september_tenant(factory, paddle)
    await deployment.cli("tenant", "credit", tenant.name, "100.00")
    await deployment.run(SEPTEMBER_END)
    invoice = await only_invoice(deployment, tenant)
    assert invoice["status"]["phase"] == "Paid"
    assert invoice["status"]["creditsApplied"] == "30.00"
    assert invoice["status"]["total"] == "0.00"
    assert invoice["providerTransactionID"]
    receipt = await deployment.client.get(
        f"{tenant.path}/invoices/{invoice['name']}/receipt", headers=bearer(tenant.readonly_key)
    )
    assert receipt.status_code == 404
    assert receipt.json()["code"] == "RECEIPT_NOT_AVAILABLE"


async def test_failed_and_timed_out_charges_stay_draft_until_a_later_run(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle
) -> None:
    deployment = await billing(**paddle_overrides(paddle))
    tenant = await september_tenant(factory, paddle)

    # Paddle charges, and its answer comes after the client's 1 s timeout.
    paddle.hold_next("POST", "/transactions", timeout=3.0)
    assert (await deployment.run(SEPTEMBER_END))["chargesAttempted"] == 1
    invoice = await only_invoice(deployment, tenant)
    assert (invoice["status"]["phase"], invoice["providerTransactionID"]) == ("Draft", "")
    await until(lambda: len(paddle.state.transactions) == 1)
    [lost] = paddle.state.transactions

    paddle.fail_next(500, "internal_error")
    await deployment.run(SEPTEMBER_END)
    assert (await only_invoice(deployment, tenant))["status"]["phase"] == "Draft"
    paddle.fail_next(429, "too_many_requests", kind="request_error")
    await deployment.run(SEPTEMBER_END)
    assert (await only_invoice(deployment, tenant))["status"]["phase"] == "Draft"

    # The next attempt finds the lost charge by the invoice id in its custom data.
    await deployment.run(SEPTEMBER_END)
    invoice = await only_invoice(deployment, tenant)
    assert invoice["status"]["phase"] == "Billed"
    assert invoice["providerTransactionID"] == lost
    assert len(paddle.calls("POST", "/transactions")) == 1
    [search, *_] = paddle.calls("GET", "/transactions?")
    assert "collection_mode=manual" in search.path


async def lost_charge(deployment: Billing, paddle: FakePaddle) -> str:
    """Run billing once with the create's answer lost: Paddle made the charge, the run timed
    out. Returns the transaction's id."""
    paddle.hold_next("POST", "/transactions", timeout=3.0)
    await deployment.run(SEPTEMBER_END)
    await until(lambda: len(paddle.state.transactions) == 1)
    [lost] = paddle.state.transactions
    return lost


async def test_a_lost_charge_is_found_beyond_the_first_page_of_the_customers_transactions(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle
) -> None:
    deployment = await billing(**paddle_overrides(paddle))
    tenant = await september_tenant(factory, paddle)
    lost = await lost_charge(deployment, paddle)
    customer = paddle.transaction(lost)["customer_id"]
    for _ in range(150):  # newer: listed before it, newest first
        paddle.bill(customer, "100")
    await deployment.run(SEPTEMBER_END)
    invoice = await only_invoice(deployment, tenant)
    assert (invoice["status"]["phase"], invoice["providerTransactionID"]) == ("Billed", lost)
    assert len(paddle.calls("POST", "/transactions")) == 1
    assert any("after=" in call.path for call in paddle.calls("GET", "/transactions?"))


async def test_the_search_reaches_back_to_the_first_attempt_of_an_invoice_issued_later(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle, database: Database
) -> None:
    """An invoice issued as of an instant ahead (``billing run --now`` in the future) was
    charged before that instant: the search for its charge starts at its first attempt."""
    deployment = await billing(**paddle_overrides(paddle))
    tenant = await september_tenant(factory, paddle)
    lost = await lost_charge(deployment, paddle)
    async with database.transaction() as session:
        await session.execute(
            update(Invoice)
            .where(Invoice.tenant_id == tenant.id)
            .values(created_at=datetime.now(UTC) + timedelta(days=30))
        )
    await deployment.run(SEPTEMBER_END)
    invoice = await only_invoice(deployment, tenant)
    assert invoice["providerTransactionID"] == lost
    assert len(paddle.calls("POST", "/transactions")) == 1


async def test_a_refused_charge_is_retried_by_a_later_run(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle
) -> None:
    deployment = await billing(**paddle_overrides(paddle))
    tenant = await september_tenant(factory, paddle)
    paddle.fail_next(400, "bad_request", "Invalid request.", kind="request_error", method="POST")
    await deployment.run(SEPTEMBER_END)
    assert (await only_invoice(deployment, tenant))["status"]["phase"] == "Draft"
    await deployment.run(SEPTEMBER_END)
    assert (await only_invoice(deployment, tenant))["status"]["phase"] == "Billed"
    # Each run searches first (nothing found): one refused create, then one made.
    assert len(paddle.calls("POST", "/transactions")) == 2
    assert len(paddle.calls("GET", "/transactions?")) == 2


async def until(condition: Callable[[], bool]) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_SECONDS
    while not condition():
        assert loop.time() < deadline, "condition never met"
        await asyncio.sleep(0.05)


async def test_a_charge_uses_the_customers_address(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle
) -> None:
    deployment = await billing(**paddle_overrides(paddle))
    tenant = await september_tenant(factory)
    customer, _ = paddle.add_customer(addresses=0)
    await deployment.cli("billing", "link", tenant.name, "--customer", customer)
    # Paddle bills a transaction only with an address: none yet, so nothing is charged.
    await deployment.run(SEPTEMBER_END)
    assert (await only_invoice(deployment, tenant))["status"]["phase"] == "Draft"
    assert paddle.calls("POST", "/transactions") == []

    address = paddle.add_address(customer)
    await deployment.run(SEPTEMBER_END)
    assert (await only_invoice(deployment, tenant))["status"]["phase"] == "Billed"
    [call] = paddle.calls("POST", "/transactions")
    assert call.body["address_id"] == address

    # An address linked by the operator is used as it is.
    other = paddle.add_address(customer, country="FR")
    await deployment.cli("billing", "link", tenant.name, "--customer", customer, "--address", other)
    await deployment.cli("tenant", "cancel", tenant.name, "--now", "2026-10-02T00:00:00Z")
    assert paddle.calls("POST", "/transactions")[-1].body["address_id"] == other


async def test_an_unlinked_tenant_is_charged_once_linked(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle
) -> None:
    deployment = await billing(**paddle_overrides(paddle))
    tenant = await september_tenant(factory)
    await deployment.run(SEPTEMBER_END)
    assert (await only_invoice(deployment, tenant))["status"]["phase"] == "Draft"
    assert paddle.calls("POST", "/transactions") == []

    customer, _ = paddle.add_customer()
    output = await deployment.cli("billing", "link", tenant.name, "--customer", customer)
    assert "1 pending charge(s) submitted" in output
    invoice = await only_invoice(deployment, tenant)
    assert invoice["status"]["phase"] == "Billed"
    assert paddle.calls("POST", "/transactions")[0].body["customer_id"] == customer


async def test_receipt_requires_a_paid_or_past_due_charge(
    billing: BillingFactoryFn,
    factory: Factory,
    paddle: FakePaddle,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    deployment = await billing(**paddle_overrides(paddle), run_reconcilers=True)
    tenant = await september_tenant(factory, paddle)
    await deployment.run(SEPTEMBER_END)
    path = f"{tenant.path}/invoices/{tenant.name}-20260901"
    invoice = await deployment.wait_for(
        path, bearer(tenant.admin_key), lambda doc: doc["providerTransactionID"] != ""
    )
    billed = await deployment.client.get(f"{path}/receipt", headers=bearer(tenant.readonly_key))
    assert billed.status_code == 409
    assert billed.json()["code"] == "INVOICE_NOT_CHARGED"

    data = paddle.settle(invoice["providerTransactionID"], "completed")
    body = paddle.event("transaction.completed", data)
    delivered = await deployment.client.post(
        "/webhooks/paddle", content=body, headers=paddle.signed_headers(body)
    )
    assert delivered.status_code == 200
    await deployment.wait_for(
        path, bearer(tenant.admin_key), lambda doc: doc["status"]["phase"] == "Paid"
    )

    first = await deployment.client.get(f"{path}/receipt", headers=bearer(tenant.readonly_key))
    second = await deployment.client.get(f"{path}/receipt", headers=bearer(tenant.readonly_key))
    assert first.status_code == 200
    assert first.headers["Cache-Control"] == "no-store"
    assert first.json()["url"].startswith(f"{INVOICE_HOST}/invoices/")
    assert first.json()["url"] != second.json()["url"]  # fresh each time, never stored
    logged = capsys.readouterr()
    for url in (first.json()["url"], second.json()["url"]):
        assert url not in logged.out + logged.err + caplog.text

    paddle.fail_next(500, "internal_error")
    failed = await deployment.client.get(f"{path}/receipt", headers=bearer(tenant.admin_key))
    assert failed.status_code == 502
    assert failed.json()["code"] == "BILLING_PROVIDER_UNAVAILABLE"
    paddle.stall_next(3.0)
    timed_out = await deployment.client.get(f"{path}/receipt", headers=bearer(tenant.admin_key))
    assert timed_out.status_code == 502

    unconfigured = await billing()
    response = await unconfigured.client.get(f"{path}/receipt", headers=bearer(tenant.admin_key))
    assert response.status_code == 503
    assert response.json()["code"] == "BILLING_NOT_CONFIGURED"


async def test_portal_session(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle
) -> None:
    deployment = await billing(**paddle_overrides(paddle))
    tenant = await factory.tenant()
    path = f"{tenant.path}/billing/portal-session"

    missing = await deployment.client.post(path, headers=bearer(tenant.admin_key))
    assert missing.status_code == 409
    assert missing.json()["code"] == "BILLING_PROFILE_MISSING"
    readonly = await deployment.client.post(path, headers=bearer(tenant.readonly_key))
    assert readonly.status_code == 403

    customer, [subscription] = paddle.add_customer(subscriptions=1)
    await deployment.cli("billing", "link", tenant.name, "--customer", customer)
    without = await deployment.client.post(path, headers=bearer(tenant.admin_key))
    assert without.status_code == 200
    assert without.headers["Cache-Control"] == "no-store"
    assert set(without.json()) == {"overviewURL"}
    assert without.json()["overviewURL"].startswith(f"{PORTAL_HOST}/")

    await deployment.cli(
        "billing", "link", tenant.name, "--customer", customer, "--subscription", subscription
    )
    session = (await deployment.client.post(path, headers=bearer(tenant.admin_key))).json()
    assert set(session) == {"overviewURL", "updatePaymentMethodURL"}
    assert subscription in session["updatePaymentMethodURL"]
    [call, *_] = reversed(paddle.calls("POST", f"/customers/{customer}/portal-sessions"))
    assert call.body == {"subscription_ids": [subscription]}

    paddle.fail_next(503, "service_unavailable")
    failed = await deployment.client.post(path, headers=bearer(tenant.admin_key))
    assert failed.status_code == 502
    assert failed.json()["code"] == "BILLING_PROVIDER_UNAVAILABLE"

    unconfigured = await billing()
    response = await unconfigured.client.post(path, headers=bearer(tenant.admin_key))
    assert response.status_code == 503
    assert response.json()["code"] == "BILLING_NOT_CONFIGURED"
    assert response.headers["Retry-After"]


async def test_provider_calls_share_one_connection_closed_at_shutdown(
    database: Database,
    database_url: str,
    tmp_path: Path,
    plans_file: Path,
    factory: Factory,
    paddle: FakePaddle,
) -> None:
    tenant = await factory.tenant()
    customer, _ = paddle.add_customer()
    await factory.billing.link(tenant.name, customer)
    settings = make_settings(
        database_url,
        tmp_path,
        run_reconcilers=False,
        plans_file=plans_file,
        **paddle_overrides(paddle),
    )
    path = f"{tenant.path}/billing/portal-session"
    async with running_app(settings) as app, api_client(app) as client:
        for _ in range(3):
            response = await client.post(path, headers=bearer(tenant.admin_key))
            assert response.status_code == 200, response.text
        assert len(paddle.calls("POST", f"/customers/{customer}/portal-sessions")) == 3
        assert paddle.server.connections == 1
        assert paddle.server.open_connections == 1
    # The app's shutdown closed the shared pool and with it the connection.
    assert paddle.server.wait_until_closed()


async def test_concurrent_runs_issue_and_charge_each_period_once(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle
) -> None:
    deployment = await billing(**paddle_overrides(paddle))
    tenants = [await september_tenant(factory, paddle) for _ in range(3)]
    for tenant in tenants:
        await deployment.cli("tenant", "credit", tenant.name, "10.00")
    # Three operators (or an operator and cron) at once, each its own process.
    reports = await asyncio.gather(
        *(deployment.run_process("2026-11-01T00:00:00Z") for _ in range(3))
    )
    issued = sorted(item["name"] for report in reports for item in report["issued"])
    expected = sorted(
        f"{tenant.name}-{day}" for tenant in tenants for day in ("20260901", "20261001")
    )
    assert issued == expected
    for tenant in tenants:
        response = await deployment.client.get(
            f"{tenant.path}/invoices", headers=bearer(tenant.admin_key)
        )
        september, october = response.json()["items"]
        # The credit was used once: all of it on September.
        assert (september["status"]["creditsApplied"], october["status"]["creditsApplied"]) == (
            "10.00",
            "0.00",
        )
        assert {september["status"]["phase"], october["status"]["phase"]} == {"Billed"}
    charged = [
        call.body["custom_data"]["invoice"] for call in paddle.calls("POST", "/transactions")
    ]
    assert sorted(charged) == expected


async def test_portal_session_under_an_idempotency_key(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle
) -> None:
    """A repeat is answered from the kept (encrypted) response without calling the provider
    again; a provider failure (502) is not kept, so a retry under the same key runs again."""
    deployment = await billing(**paddle_overrides(paddle))
    tenant = await factory.tenant()
    path = f"{tenant.path}/billing/portal-session"
    customer, _ = paddle.add_customer(subscriptions=1)
    await deployment.cli("billing", "link", tenant.name, "--customer", customer)
    headers = {**bearer(tenant.admin_key), "Idempotency-Key": '"portal-1"'}
    provider_path = f"/customers/{customer}/portal-sessions"

    paddle.fail_next(500, "internal_error")
    failed = await deployment.client.post(path, headers=headers)
    assert failed.status_code == 502
    calls_before = len(paddle.calls("POST", provider_path))
    first = await deployment.client.post(path, headers=headers)
    again = await deployment.client.post(path, headers=headers)
    assert first.status_code == again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert again.headers["Cache-Control"] == "no-store"
    assert len(paddle.calls("POST", provider_path)) == calls_before + 1
