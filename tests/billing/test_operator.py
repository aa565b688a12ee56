"""Operator commands (cancel, credit, link), the scheduled billing cycle and the price list."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from tenantplane.billing.cycle import invoice_name
from tenantplane.billing.metering import month_start
from tenantplane.billing.models import InvoiceKind
from tenantplane.db.base import utcnow
from tests.billing.conftest import BillingFactoryFn, paddle_overrides
from tests.billing.test_paddle import SEPTEMBER_END, september_tenant
from tests.factories import Factory
from tests.fakes.paddle import FakePaddle
from tests.http_client import bearer

GIB = 2**30


async def test_cancel_issues_a_final_invoice_for_usage_since_the_last_one(
    billing: BillingFactoryFn, factory: Factory
) -> None:
    deployment = await billing()
    tenant = await factory.tenant()
    await factory.billing.backdate_tenant(tenant.id, datetime(2026, 9, 1, tzinfo=UTC))
    cluster = factory.cluster(tenant.id, "app", cpu_millicores=3000)
    await cluster.record(datetime(2026, 10, 1, tzinfo=UTC), "created", phase="Running")
    await deployment.run(SEPTEMBER_END)

    output = await deployment.cli(
        "tenant", "cancel", tenant.name, "--now", "2026-10-11T00:00:00Z", "--json"
    )
    report = json.loads(output)
    final = f"{tenant.name}-20261001-final"
    assert report["final"] == final
    response = await deployment.client.get(
        f"{tenant.path}/invoices/{final}", headers=bearer(tenant.admin_key)
    )
    invoice = response.json()
    assert invoice["billingPeriod"] == {
        "start": "2026-10-01T00:00:00Z",
        "end": "2026-10-11T00:00:00Z",
    }
    lines = {line["kind"]: line for line in invoice["status"]["lineItems"]}
    # 10 of October's 31 days of the 30.00 fee; 240 hours of 3 vCPU at 0.04.
    assert lines["platform"]["amount"] == "9.68"  # 30 * 240/744 = 9.677…
    assert lines["cpu"]["amount"] == "28.80"
    assert lines["memory"]["amount"] == "1.20"  # 240 GiB-h at 0.005
    assert lines["storage"]["amount"] == "0.48"  # 2400 GiB-h at 0.0002
    assert invoice["status"]["subtotal"] == "40.16"

    listed = await deployment.client.get(
        f"{tenant.path}/invoices", headers=bearer(tenant.admin_key)
    )
    assert [item["name"] for item in listed.json()["items"]] == [f"{tenant.name}-20260901", final]
    # A cancelled tenant is not billed again, and cannot be cancelled twice.
    assert (await deployment.run("2027-01-01T00:00:00Z"))["issued"] == []
    again = await deployment.cli("tenant", "cancel", tenant.name, expect=1)
    assert "already cancelled" in again


async def test_operator_input_is_validated(billing: BillingFactoryFn, factory: Factory) -> None:
    # Invalid values are usage errors (exit 2) as in every command; unknown names refusals (1).
    deployment = await billing()
    tenant = await factory.tenant()
    for amount in ("0", "abc", "1.001", "NaN", "Infinity"):
        output = await deployment.cli("tenant", "credit", tenant.name, amount, expect=2)
        assert "AMOUNT" in output, amount
    negative = await deployment.cli("tenant", "credit", tenant.name, "--", "-5", expect=2)
    assert "AMOUNT" in negative
    assert "not found" in await deployment.cli("tenant", "credit", "nobody", "5", expect=1)
    bad_customer = await deployment.cli(
        "billing", "link", tenant.name, "--customer", "cus_123", expect=2
    )
    assert "ctm_" in bad_customer
    bad_subscription = await deployment.cli(
        "billing", "link", tenant.name, "--customer", "ctm_1", "--subscription", "x", expect=2
    )
    assert "sub_" in bad_subscription
    assert "not found" in await deployment.cli(
        "billing", "link", "nobody", "--customer", "ctm_1", expect=1
    )
    await deployment.cli("billing", "run", "--now", "yesterday", expect=2)


async def test_billing_commands_answer_json_results_and_errors(
    billing: BillingFactoryFn, factory: Factory
) -> None:
    deployment = await billing()
    tenant = await factory.tenant()
    linked = await deployment.cli_json("billing", "link", tenant.name, "--customer", "ctm_01")
    assert linked == {
        "tenant": tenant.name,
        "customerID": "ctm_01",
        "subscriptionID": None,
        "addressID": None,
        "chargesAttempted": 0,
    }
    credit = await deployment.cli_json("tenant", "credit", tenant.name, "2.50")
    assert credit == {"tenant": tenant.name, "creditBalance": "2.50"}
    report = await deployment.cli_json("billing", "run", "--now", "2026-10-01T00:00:00Z")
    assert report == {"issued": [], "chargesAttempted": 0}

    # Errors: one JSON document on stdout, its exit code the same as in every command.
    invalid = await deployment.cli_json("tenant", "credit", tenant.name, "abc", expect=2)
    assert invalid["error"]["code"] == "VALIDATION_FAILED"
    unknown = await deployment.cli_json(
        "billing", "link", "nobody", "--customer", "ctm_1", expect=1
    )
    assert unknown["error"]["code"] == "NOT_FOUND"
    bad_now = await deployment.cli_json("billing", "run", "--now", "yesterday", expect=2)
    assert bad_now["error"]["code"] == "USAGE"
    assert "--now" in bad_now["error"]["message"]
    deployment.env["TENANTPLANE_DATABASE_URL"] = "postgresql://nobody:secret-pw-9@127.0.0.1:1/none"
    unreachable = await deployment.cli_json("tenant", "cancel", tenant.name, expect=3)
    assert unreachable["error"]["code"] == "UNAVAILABLE"
    assert "secret-pw-9" not in unreachable["error"]["message"]
    # Nothing was charged or issued by the failures.
    deployment.env["TENANTPLANE_DATABASE_URL"] = deployment.settings.database_url
    credit = await deployment.cli_json("tenant", "credit", tenant.name, "0.50")
    assert credit["creditBalance"] == "3.00"


async def test_the_scheduled_cycle_issues_and_charges_without_an_operator(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle
) -> None:
    deployment = await billing(**paddle_overrides(paddle), run_reconcilers=True)
    tenant = await september_tenant(factory, paddle)
    await factory.billing.billing_schedule(utcnow())
    this_month = month_start(utcnow())
    invoices = await deployment.wait_for(
        f"{tenant.path}/invoices",
        bearer(tenant.admin_key),
        lambda doc: (
            bool(doc["items"]) and all(item["status"]["phase"] == "Billed" for item in doc["items"])
        ),
    )
    names = [item["name"] for item in invoices["items"]]
    assert names[0] == f"{tenant.name}-20260901"
    assert invoices["items"][-1]["billingPeriod"]["end"] == this_month.isoformat().replace(
        "+00:00", "Z"
    )
    assert len(paddle.calls("POST", "/transactions")) == len(names)


def test_invoice_names_follow_the_spec() -> None:
    start = datetime(2026, 10, 1, 0, 0, tzinfo=UTC)
    assert invoice_name("acme", start, InvoiceKind.regular, set()) == "acme-20261001"
    assert invoice_name("acme", start, InvoiceKind.final, set()) == "acme-20261001-final"
    later = start + timedelta(hours=13, minutes=5, seconds=9)
    assert (
        invoice_name("acme", later, InvoiceKind.regular, {"acme-20261001"})
        == "acme-20261001-130509"
    )


async def test_plans_are_served_to_any_authenticated_caller(
    billing: BillingFactoryFn, factory: Factory
) -> None:
    deployment = await billing(plans_file=None)
    tenant = await factory.tenant()
    response = await deployment.client.get("/plans", headers=bearer(tenant.readonly_key))
    assert response.status_code == 200
    plans = {plan["name"]: plan["prices"] for plan in response.json()["items"]}
    assert set(plans) == {"starter", "pro", "business", "enterprise"}
    assert plans["pro"]["currency"] == "EUR"
    assert plans["pro"]["platformFee"] == "49.00"
    assert {meter["name"] for meter in plans["pro"]["observability"]} == {"metrics", "logs"}
    limits = {plan["name"]: plan["limits"] for plan in response.json()["items"]}
    assert limits["starter"] == {"clusters": 3, "cpu": "8", "memory": "16Gi", "storage": "200Gi"}
    anonymous: httpx.Response = await deployment.client.get("/plans")
    assert anonymous.status_code == 401
    # One plan by its name; an unknown one is 404 in the envelope.
    pro = await deployment.client.get("/plans/pro", headers=bearer(tenant.readonly_key))
    assert pro.status_code == 200
    assert pro.json() == next(p for p in response.json()["items"] if p["name"] == "pro")
    missing = await deployment.client.get("/plans/gold", headers=bearer(tenant.readonly_key))
    assert (missing.status_code, missing.json()["code"]) == (404, "NOT_FOUND")
    assert (await deployment.client.get("/plans/pro")).status_code == 401


async def test_a_broken_price_list_is_refused_with_a_message(
    billing: BillingFactoryFn, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("plans:\n  starter:\n    prices:\n      currency: EUR\n", encoding="utf-8")
    deployment = await billing()
    deployment.env["TENANTPLANE_PLANS_FILE"] = str(broken)
    # The price list is configuration: a bad file is a bad setting (exit 2), named.
    output = await deployment.cli("billing", "run", expect=2)
    assert "price list" in output
    assert "TENANTPLANE_PLANS_FILE" in output
