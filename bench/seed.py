"""Direct database seeding for the big scenarios: rows as the application writes them,
inserted in bulk through the application's own table definitions (SQLAlchemy Core)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from itertools import islice
from typing import Any

from sqlalchemy import Engine, create_engine, select
from sqlalchemy.engine import make_url

import tenantplane.reconcilers  # noqa: F401  (imports every model: the full metadata)
from tenantplane.billing.models import Invoice, InvoiceLineItem
from tenantplane.cluster.models import Cluster, ClusterHistory
from tenantplane.tenant.models import Tenant

CHUNK = 2000


def sync_engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return create_engine(parsed.set(drivername="sqlite"))
    return create_engine(parsed.set(drivername="postgresql+psycopg"))


def _chunks(rows: Iterable[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    iterator = iter(rows)
    while chunk := list(islice(iterator, CHUNK)):
        yield chunk


def _insert(engine: Engine, table: Any, rows: Iterable[dict[str, Any]]) -> None:
    with engine.begin() as connection:
        for chunk in _chunks(rows):
            connection.execute(table.insert(), chunk)


def tenant_id(engine: Engine, name: str) -> int:
    with engine.connect() as connection:
        return int(connection.execute(select(Tenant.id).where(Tenant.name == name)).scalar_one())


def seed_tenants(engine: Engine, prefix: str, count: int, created_at: datetime) -> list[int]:
    rows = (
        {
            "name": f"{prefix}-{index}",
            "plan": "starter",
            "created_at": created_at,
            "resource_version": 1,
        }
        for index in range(count)
    )
    _insert(engine, Tenant.__table__, rows)
    with engine.connect() as connection:
        found = connection.execute(select(Tenant.id).where(Tenant.name.like(f"{prefix}-%")))
        return sorted(int(row) for row in found.scalars())


def cluster_row(tenant: int, name: str, created_at: datetime) -> dict[str, Any]:
    uid = uuid.uuid4().hex
    return {
        "uid": uid,
        "tenant_id": tenant,
        "name": name,
        "created_at": created_at,
        "type": "shared",
        "version": "1.33",
        "high_availability": False,
        "cpu": "2",
        "memory": "4Gi",
        "storage": "20Gi",
        "cpu_millicores": 2000,
        "memory_bytes": 4 * 2**30,
        "storage_bytes": 20 * 2**30,
        "alerts": {},
        "generation": 1,
        "phase": "Running",
        "observed_generation": 1,
        "endpoint": f"https://{name}-{uid[:8]}.clusters.tenantplane.test:443",
        "certificate_authority": "",
        "kubernetes_version": "v1.33.4",
        "conditions": [],
        "metrics": {},
        "resource_version": 3,
    }


def seed_clusters(
    engine: Engine, tenants: Iterable[int], per_tenant: int, created_at: datetime
) -> list[dict[str, Any]]:
    rows = [
        cluster_row(tenant, f"cluster-{index:03d}", created_at)
        for tenant in tenants
        for index in range(per_tenant)
    ]
    _insert(engine, Cluster.__table__, rows)
    return rows


def seed_history(engine: Engine, clusters: list[dict[str, Any]], at: datetime) -> None:
    """One `created` snapshot per cluster (billing meters from cluster history)."""
    with engine.connect() as connection:
        ids = dict(connection.execute(select(Cluster.uid, Cluster.id)).tuples().all())
    rows = (
        {
            "at": at,
            "tenant_id": row["tenant_id"],
            "cluster_id": ids[row["uid"]],
            "cluster_uid": row["uid"],
            "cluster_name": row["name"],
            "event": "created",
            "phase": "Running",
            "version": row["version"],
            "kubernetes_version": row["kubernetes_version"],
            "high_availability": False,
            "cpu_millicores": row["cpu_millicores"],
            "memory_bytes": row["memory_bytes"],
            "storage_bytes": row["storage_bytes"],
        }
        for row in clusters
    )
    _insert(engine, ClusterHistory.__table__, rows)


def seed_invoices(engine: Engine, tenant: int, tenant_name: str, count: int) -> None:
    """``count`` Paid invoices of 30 days, three line items each. The last period ends in a
    month: no period is due, so the billing-cycle reconciler stays idle during the run."""
    start = datetime.now(UTC) + timedelta(days=30) - count * timedelta(days=30)
    invoices = []
    for _ in range(count):
        end = start + timedelta(days=30)
        invoices.append(
            {
                "uid": uuid.uuid4().hex,
                "tenant_id": tenant,
                "name": f"{tenant_name}-{start:%Y%m%d}",
                "kind": "regular",
                "plan": "starter",
                "period_start": start,
                "period_end": end,
                "created_at": end,
                "phase": "Paid",
                "currency": "USD",
                "subtotal": Decimal("42.00"),
                "credits_applied": Decimal("0.00"),
                "tax": Decimal("0.00"),
                "total": Decimal("42.00"),
                "conditions": [],
                "resource_version": 1,
            }
        )
        start = end
    _insert(engine, Invoice.__table__, invoices)
    with engine.connect() as connection:
        ids = connection.execute(select(Invoice.id).where(Invoice.tenant_id == tenant)).scalars()
        invoice_ids = list(ids)
    items = (
        {
            "invoice_id": invoice_id,
            "position": position,
            "kind": "cluster",
            "description": f"cluster-{position:03d} control plane",
            "cluster": f"cluster-{position:03d}",
            "quantity": Decimal("720"),
            "unit": "hour",
            "unit_price": Decimal("0.0194"),
            "amount": Decimal("14.00"),
        }
        for invoice_id in invoice_ids
        for position in range(3)
    )
    _insert(engine, InvoiceLineItem.__table__, items)
