"""Cancelling a tenant that runs things: its HA cluster (Running through the simulator
orchestrator) is deleted and reconciled away, its secret's sync targets are withdrawn, and
the final invoice meters the cluster up to the cancellation time and not a moment after,
though the cluster is torn down later."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Any

from sqlalchemy import select

from tenantplane.billing.metering import month_start
from tenantplane.cluster.models import ClusterHistory
from tenantplane.db.base import utcnow
from tenantplane.db.engine import Database
from tests.billing.conftest import BillingFactoryFn
from tests.cluster.polling import create_cluster, gone, poll, status_matches
from tests.factories import Factory
from tests.http_client import bearer
from tests.secret.conftest import FAST
from tests.secret.support import copies_in, wait_for_phase
from tests.secret.test_cluster_lifecycle import cluster_uid

GIB_HOUR_MEMORY = Decimal("0.0050")
GIB_HOUR_STORAGE = Decimal("0.0002")
VCPU_HOUR = Decimal("0.0400")
HA_HOUR = Decimal("0.1000")
PLATFORM_FEE = Decimal("30.00")


def hours(start: datetime, end: datetime) -> Fraction:
    return Fraction((end - start) // timedelta(microseconds=1), 3_600_000_000)


def money(value: Fraction) -> Decimal:
    exact = Decimal(value.numerator) / Decimal(value.denominator)
    return exact.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def rfc3339(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


async def history(database: Database, uid: str) -> list[ClusterHistory]:
    async with database.sessionmaker() as session:
        statement = (
            select(ClusterHistory)
            .where(ClusterHistory.cluster_uid == uid)
            .order_by(ClusterHistory.at, ClusterHistory.id)
        )
        return list((await session.execute(statement)).scalars())


async def test_cancel_deletes_clusters_withdraws_secrets_and_stops_metering_at_once(
    billing: BillingFactoryFn, factory: Factory, database: Database
) -> None:
    deployment = await billing(run_reconcilers=True, **FAST)
    client = deployment.client
    tenant = await factory.tenant()
    start = month_start(utcnow())
    await factory.billing.backdate_tenant(tenant.id, start)
    headers = bearer(tenant.admin_key)

    resources = {"cpu": "2", "memory": "4Gi", "storage": "10Gi"}
    await create_cluster(
        client, tenant.path, tenant.admin_key, "app", highAvailability=True, resources=resources
    )
    cluster_path = f"{tenant.path}/clusters/app"
    healthy = await poll(client, cluster_path, headers, status_matches(haConfigured=True), "HA")
    assert healthy.json()["status"]["phase"] == "Running"
    secret = await client.post(
        f"{tenant.path}/secrets",
        json={
            "name": "db",
            "secretPath": "apps/db",
            "sync": [{"cluster": "app", "namespace": "a"}],
        },
        headers=headers,
    )
    assert secret.status_code == 201, secret.text
    await wait_for_phase(client, f"{tenant.path}/secrets/db", tenant.admin_key, "Synced")
    uid = await cluster_uid(database, tenant.id, "app")
    assert await copies_in(database, uid) == {("a", "db")}

    cancelled_at = utcnow()
    report: dict[str, Any] = json.loads(
        await deployment.cli(
            "tenant", "cancel", tenant.name, "--now", rfc3339(cancelled_at), "--json"
        )
    )
    assert report["state"] == "cancelled"
    assert report["clustersDeleted"] == ["app"]
    assert report["secretsWithdrawn"] == ["db"]

    # Reconciled away: the cluster is gone (its copy with it); the secret stays readable,
    # its targets withdrawn and that state reached.
    await poll(client, cluster_path, headers, gone, "the cluster to go")
    kept = await wait_for_phase(client, f"{tenant.path}/secrets/db", tenant.admin_key, "Synced")
    assert kept["sync"] == []
    assert kept["status"]["syncStatuses"] == []

    rows = await history(database, uid)
    running = [row for row in rows if row.at < cancelled_at]
    assert running[-1].phase == "Running"
    after = [row.phase for row in rows if row.at >= cancelled_at]
    assert after[0] == "Terminating"  # the cancellation's own request
    assert after[-1] == "Deleted"  # later, when the orchestrator was done
    first_running = next(row.at for row in running if row.phase == "Running")
    assert all(row.phase == "Running" for row in running if row.at >= first_running)
    ha_enabled_at = next(row.ha_enabled_at for row in running if row.ha_enabled_at)
    assert ha_enabled_at is not None

    invoice = (
        await client.get(f"{tenant.path}/invoices/{report['final']}", headers=headers)
    ).json()
    assert invoice["billingPeriod"] == {"start": rfc3339(start), "end": rfc3339(cancelled_at)}
    lines = {line["kind"]: line for line in invoice["status"]["lineItems"]}
    ran = hours(first_running, cancelled_at)
    expected = {
        "cpu": money(ran * 2 * Fraction(VCPU_HOUR)),
        "memory": money(ran * 4 * Fraction(GIB_HOUR_MEMORY)),
        "storage": money(ran * 10 * Fraction(GIB_HOUR_STORAGE)),
        "ha": money(hours(ha_enabled_at, cancelled_at) * Fraction(HA_HOUR)),
    }
    assert {kind: Decimal(lines[kind]["amount"]) for kind in expected} == expected
    days = (month_start(start + timedelta(days=32)) - start).days
    fee = money(hours(start, cancelled_at) / (24 * days) * Fraction(PLATFORM_FEE))
    assert Decimal(lines["platform"]["amount"]) == fee
    cpu_hours = Decimal(lines["cpu"]["quantity"])
    assert cpu_hours == (Decimal(ran.numerator) * 2 / Decimal(ran.denominator)).quantize(
        Decimal("0.000001"), rounding=ROUND_HALF_UP
    )
    assert invoice["status"]["subtotal"] == str(sum(expected.values()) + fee)

    # Nothing is billed after the cancellation, however long the teardown took.
    far = rfc3339(month_start(start + timedelta(days=70)))
    assert (await deployment.run(far))["issued"] == []
