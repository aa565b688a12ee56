"""The billing cycle end to end: a month of cluster usage through `tenantplane billing run`,
every amount compared with values computed by hand (prices in conftest.TEST_PRICES:
fee 30.00/month, vCPU-hour 0.0400, GiB-memory-hour 0.0050, GiB-storage-hour 0.0002,
HA hour 0.1000; all half-up to cents per line)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from tenantplane.tenant.models import Plan
from tests.billing.conftest import BillingFactoryFn
from tests.factories import Factory
from tests.http_client import bearer

GIB = 2**30


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def cents(value: Decimal) -> str:
    return str(value.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def lines_by(invoice: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (line["kind"], line.get("cluster", "")): line for line in invoice["status"]["lineItems"]
    }


async def record_month(factory: Factory, tenant_id: int) -> None:
    """web: 2 vCPU/4 GiB/20 GiB, Running from Sep 30 22:00, resized to 4/8/50 on Oct 10
    06:00, deleted Oct 20 (Terminating from 00:00, gone at 00:10).
    db: HA, 1 vCPU/2 GiB/10 GiB, Running from Oct 5 00:30, HA configured at 01:00."""
    web = factory.cluster(
        tenant_id, "web", cpu_millicores=2000, memory_bytes=4 * GIB, storage_bytes=20 * GIB
    )
    await web.record(at("2026-09-30T20:00:00"), "created", phase="Pending")
    await web.record(at("2026-09-30T21:00:00"), "phase_changed", phase="Provisioning")
    await web.record(at("2026-09-30T22:00:00"), "phase_changed", phase="Running")
    await web.record(
        at("2026-10-10T06:00:00"),
        "spec_changed",
        cpu_millicores=4000,
        memory_bytes=8 * GIB,
        storage_bytes=50 * GIB,
    )
    await web.record(at("2026-10-20T00:00:00"), "phase_changed", phase="Terminating")
    await web.record(at("2026-10-20T00:10:00"), "deleted", phase="Deleted")

    db = factory.cluster(
        tenant_id,
        "db",
        high_availability=True,
        cpu_millicores=1000,
        memory_bytes=2 * GIB,
        storage_bytes=10 * GIB,
    )
    await db.record(at("2026-10-05T00:00:00"), "created", phase="Pending")
    await db.record(at("2026-10-05T00:30:00"), "phase_changed", phase="Running")
    await db.record(
        at("2026-10-05T01:00:00"), "ha_configured", ha_enabled_at=at("2026-10-05T01:00:00")
    )


async def test_a_month_of_usage_is_invoiced_exactly(
    billing: BillingFactoryFn, factory: Factory
) -> None:
    deployment = await billing()
    tenant = await factory.tenant("acme", plan=Plan.pro)
    await factory.billing.backdate_tenant(tenant.id, at("2026-09-15T12:00:00"))
    await record_month(factory, tenant.id)
    await deployment.cli("tenant", "credit", "acme", "20.00", "--note", "welcome")

    report = await deployment.run("2026-11-01T00:00:00Z")
    assert [item["name"] for item in report["issued"]] == ["acme-20260915", "acme-20261001"]
    assert report["chargesAttempted"] == 0

    response = await deployment.client.get(
        "/tenants/acme/invoices", headers=bearer(tenant.readonly_key)
    )
    assert response.status_code == 200
    september, october = response.json()["items"]

    # September: [Sep 15 12:00, Oct 1) is 372 of the month's 720 hours; web ran 2 hours.
    assert september["billingPeriod"] == {
        "start": "2026-09-15T12:00:00Z",
        "end": "2026-10-01T00:00:00Z",
    }
    lines = lines_by(september)
    fee = Decimal("30.00") * Decimal(372) / Decimal(720)
    assert lines[("platform", "")]["amount"] == cents(fee) == "15.50"
    assert lines[("cpu", "web")]["amount"] == cents(2 * 2 * Decimal("0.0400")) == "0.16"
    assert lines[("cpu", "web")]["quantity"] == "4.000000"
    assert lines[("memory", "web")]["amount"] == cents(2 * 4 * Decimal("0.0050")) == "0.04"
    # 40 GiB-hours at 0.0002 = 0.008: rounded half up per line.
    assert lines[("storage", "web")]["amount"] == cents(2 * 20 * Decimal("0.0002")) == "0.01"
    assert lines[("observability.metrics", "")]["amount"] == "0.00"
    assert ("cpu", "db") not in lines  # db did not exist yet
    september_subtotal = Decimal("15.50") + Decimal("0.16") + Decimal("0.04") + Decimal("0.01")
    assert september["status"]["subtotal"] == str(september_subtotal) == "15.71"
    # The 20.00 credit covers September entirely, the rest goes to October.
    assert september["status"]["creditsApplied"] == "15.71"
    assert september["status"]["total"] == "0.00"

    # October: 744 hours. web: 222 h at 2/4/20 then 234 h at 4/8/50 (Terminating is free).
    # db: Running 647.5 h at 1/2/10, HA for 647 h from 01:00.
    assert october["name"] == "acme-20261001"
    assert october["billingPeriod"] == {
        "start": "2026-10-01T00:00:00Z",
        "end": "2026-11-01T00:00:00Z",
    }
    lines = lines_by(october)
    expected = {
        ("platform", ""): Decimal("30.00"),
        ("cpu", "web"): (222 * 2 + 234 * 4) * Decimal("0.0400"),  # 1380 vCPU-h = 55.20
        ("memory", "web"): (222 * 4 + 234 * 8) * Decimal("0.0050"),  # 2760 GiB-h = 13.80
        ("storage", "web"): (222 * 20 + 234 * 50) * Decimal("0.0002"),  # 16140 = 3.228
        ("cpu", "db"): Decimal("647.5") * 1 * Decimal("0.0400"),  # 25.90
        ("memory", "db"): Decimal("647.5") * 2 * Decimal("0.0050"),  # 6.475 → 6.48
        ("storage", "db"): Decimal("647.5") * 10 * Decimal("0.0002"),  # 1.295 → 1.30
        ("ha", "db"): 647 * Decimal("0.1000"),  # 64.70
        ("observability.metrics", ""): Decimal(0),
    }
    assert {key: line["amount"] for key, line in lines.items()} == {
        key: cents(value) for key, value in expected.items()
    }
    assert lines[("memory", "db")]["amount"] == "6.48"
    assert lines[("storage", "web")]["amount"] == "3.23"
    assert lines[("ha", "db")]["quantity"] == "647.000000"
    assert lines[("cpu", "web")]["unitPrice"] == "0.0400"
    subtotal = sum(Decimal(cents(value)) for value in expected.values())
    assert october["status"]["subtotal"] == str(subtotal) == "200.61"
    assert october["status"]["creditsApplied"] == "4.29"
    assert october["status"]["total"] == "196.32"  # net, until the provider adds tax
    assert october["status"]["tax"] == "0.00"
    assert october["status"]["currency"] == "EUR"
    assert october["status"]["phase"] == "Draft"
    assert october["providerTransactionID"] == ""
    assert october["status"]["providerInvoiceNumber"] == ""
    assert october["status"]["billedUntil"] == "2026-11-01T00:00:00Z"
    assert october["status"]["issuedAt"] == "2026-11-01T00:00:00Z"
    [condition] = october["status"]["conditions"]
    assert condition["type"] == "ObservabilityDegraded"
    assert condition["status"] == "False"

    # Idempotent: a second run (even later the same month) issues nothing.
    again = await deployment.run("2026-11-15T00:00:00Z")
    assert again["issued"] == []
    listed = await deployment.client.get("/tenants/acme/invoices", headers=bearer(tenant.admin_key))
    assert [item["name"] for item in listed.json()["items"]] == ["acme-20260915", "acme-20261001"]
    balance = json.loads(await deployment.cli("tenant", "credit", "acme", "1.00", "--json"))
    assert balance == {"tenant": "acme", "creditBalance": "1.00"}


async def test_get_invoice_with_etag_and_errors(
    billing: BillingFactoryFn, factory: Factory
) -> None:
    deployment = await billing()
    tenant = await factory.tenant()
    await factory.billing.backdate_tenant(tenant.id, at("2026-09-01T00:00:00"))
    await deployment.run("2026-10-01T00:00:00Z")
    name = f"{tenant.name}-20260901"
    response = await deployment.client.get(
        f"{tenant.path}/invoices/{name}", headers=bearer(tenant.readonly_key)
    )
    assert response.status_code == 200
    invoice = response.json()
    assert response.headers["ETag"] == f'"{invoice["resourceVersion"]}"'
    assert invoice["status"]["subtotal"] == "30.00"  # a whole month's fee, nothing else
    assert set(invoice) == {
        "name",
        "billingPeriod",
        "createdAt",
        "resourceVersion",
        "providerTransactionID",
        "status",
    }
    assert set(invoice["status"]) == {
        "phase",
        "billedUntil",
        "issuedAt",
        "currency",
        "subtotal",
        "creditsApplied",
        "tax",
        "total",
        "providerInvoiceNumber",
        "lineItems",
        "conditions",
    }
    missing = await deployment.client.get(
        f"{tenant.path}/invoices/{tenant.name}-20200101", headers=bearer(tenant.admin_key)
    )
    assert missing.status_code == 404
    invalid = await deployment.client.get(
        f"{tenant.path}/invoices/Not_A_Name", headers=bearer(tenant.admin_key)
    )
    assert invalid.status_code == 400
    assert invalid.json()["code"] == "INVALID_NAME"
    other = await factory.tenant()
    forbidden = await deployment.client.get(
        f"{tenant.path}/invoices/{name}", headers=bearer(other.admin_key)
    )
    assert forbidden.status_code == 403


async def test_incomplete_usage_data_marks_the_invoice_degraded(
    billing: BillingFactoryFn, factory: Factory, tmp_path: Path
) -> None:
    usage = tmp_path / "usage.json"
    deployment = await billing(usage_source="file", usage_file=usage)
    tenant = await factory.tenant()
    await factory.billing.backdate_tenant(tenant.id, at("2026-10-01T00:00:00"))
    # Metrics known for Oct 1-20 only: 80 million samples (50 included) then a gap.
    usage.write_text(
        json.dumps(
            {
                "tenants": {
                    tenant.name: [
                        {
                            "meter": "metrics",
                            "start": "2026-10-01T00:00:00Z",
                            "end": "2026-10-10T00:00:00Z",
                            "quantity": "30",
                        },
                        {
                            "meter": "metrics",
                            "start": "2026-10-10T00:00:00Z",
                            "end": "2026-10-20T00:00:00Z",
                            "quantity": "50",
                        },
                    ]
                }
            }
        ),
        encoding="utf-8",
    )
    await deployment.run("2026-11-01T00:00:00Z")
    [invoice] = (
        await deployment.client.get(f"{tenant.path}/invoices", headers=bearer(tenant.admin_key))
    ).json()["items"]
    metrics = lines_by(invoice)[("observability.metrics", "")]
    assert metrics["quantity"] == "80"
    assert metrics["amount"] == cents((80 - 50) * Decimal("0.2000")) == "6.00"
    assert invoice["status"]["subtotal"] == "36.00"
    [condition] = invoice["status"]["conditions"]
    assert condition["type"] == "ObservabilityDegraded"
    assert condition["status"] == "True"
    assert condition["reason"] == "UsageDataIncomplete"
    assert "2026-10-20T00:00:00Z" in condition["message"]


async def test_an_unreadable_usage_source_degrades_instead_of_failing(
    billing: BillingFactoryFn, factory: Factory, tmp_path: Path
) -> None:
    deployment = await billing(usage_source="file", usage_file=tmp_path / "missing.json")
    tenant = await factory.tenant()
    await factory.billing.backdate_tenant(tenant.id, at("2026-10-01T00:00:00"))
    report = await deployment.run("2026-11-01T00:00:00Z")
    assert [item["name"] for item in report["issued"]] == [f"{tenant.name}-20261001"]
    [invoice] = (
        await deployment.client.get(f"{tenant.path}/invoices", headers=bearer(tenant.admin_key))
    ).json()["items"]
    [condition] = invoice["status"]["conditions"]
    assert (condition["status"], condition["reason"]) == ("True", "UsageSourceUnavailable")
    assert invoice["status"]["subtotal"] == "30.00"
