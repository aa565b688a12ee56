"""Billing meters what the cluster feature really records: clusters created, made HA,
resized and deleted through the API (simulator orchestrator), then `billing run`."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Any

from tenantplane.billing.metering import month_end
from tenantplane.db.base import utcnow
from tests.billing.conftest import BillingFactoryFn
from tests.cluster.polling import create_cluster, gone, poll, status_matches, wait_running
from tests.factories import Factory
from tests.http_client import bearer

MICRO = Decimal("0.000001")


def decimal(value: Fraction) -> Decimal:
    return Decimal(value.numerator) / Decimal(value.denominator)


def parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def hours(start: datetime, end: datetime) -> Fraction:
    return Fraction((end - start) // timedelta(microseconds=1), 3_600_000_000)


async def test_a_cluster_lifecycle_through_the_api_is_invoiced(
    billing: BillingFactoryFn, factory: Factory
) -> None:
    deployment = await billing(run_reconcilers=True)
    client = deployment.client
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)

    await create_cluster(
        client,
        tenant.path,
        tenant.admin_key,
        "db",
        highAvailability=True,
        resources={"cpu": "1", "memory": "2Gi", "storage": "10Gi"},
    )
    healthy = await poll(
        client, f"{tenant.path}/clusters/db", headers, status_matches(haConfigured=True), "HA"
    )
    ha_enabled_at = parse(healthy.json()["status"]["haEnabledAt"])

    await create_cluster(
        client, tenant.path, tenant.admin_key, "web", resources={"cpu": "2", "memory": "4Gi"}
    )
    await wait_running(client, tenant.path, tenant.admin_key, "web")
    resized = await client.patch(
        f"{tenant.path}/clusters/web", json={"resources": {"cpu": "4"}}, headers=headers
    )
    assert resized.status_code == 200
    await client.delete(f"{tenant.path}/clusters/web", headers=headers)
    await poll(client, f"{tenant.path}/clusters/web", headers, gone, "web deleted")

    end = month_end(utcnow())
    report = await deployment.run(end.isoformat().replace("+00:00", "Z"))
    [issued] = report["issued"]
    invoice: dict[str, Any] = (
        await client.get(f"{tenant.path}/invoices/{issued['name']}", headers=headers)
    ).json()
    lines = {
        (line["kind"], line.get("cluster", "")): line for line in invoice["status"]["lineItems"]
    }

    # db is still running: HA is billed from haEnabledAt (visible in the API) to the period end.
    exact = decimal(hours(ha_enabled_at, end))
    assert lines[("ha", "db")]["quantity"] == str(
        exact.quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP)
    )
    assert lines[("ha", "db")]["amount"] == str(
        (exact * Decimal("0.1000")).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    )
    # db ran at least as long as it has been HA (1 vCPU), and no longer than it has existed.
    created_at = parse(healthy.json()["createdAt"])
    cpu_hours = Decimal(lines[("cpu", "db")]["quantity"])
    assert exact - MICRO <= cpu_hours <= decimal(hours(created_at, end))
    # Quantities are shown with six decimals: each is rounded on its own.
    assert abs(Decimal(lines[("memory", "db")]["quantity"]) - 2 * cpu_hours) <= 2 * MICRO
    assert abs(Decimal(lines[("storage", "db")]["quantity"]) - 10 * cpu_hours) <= 10 * MICRO

    # web ran a short while, resized and was deleted: metered, never HA.
    assert Decimal(lines[("cpu", "web")]["quantity"]) > 0
    assert ("ha", "web") not in lines
    subtotal = sum(Decimal(line["amount"]) for line in lines.values())
    assert invoice["status"]["subtotal"] == str(subtotal)
