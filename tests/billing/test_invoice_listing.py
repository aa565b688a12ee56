"""The invoice list answers each invoice's kept document until the invoice changes."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from sqlalchemy import select

from tenantplane.billing.models import Invoice, InvoicePhase
from tenantplane.billing.repository import (
    BillingRepository,
    invoice_listing_of,
    read_invoices,
)
from tenantplane.db.base import utcnow
from tenantplane.db.engine import Database
from tenantplane.db.reads import ReadRow, Reads
from tests.billing.conftest import BillingFactoryFn
from tests.billing.test_cycle import at
from tests.factories import Factory
from tests.http_client import bearer
from tests.reads import agree, no_documents, snapshot_of


async def test_a_paid_invoice_shows_paid_on_the_next_poll(
    billing: BillingFactoryFn, factory: Factory, database: Database
) -> None:
    deployment = await billing()
    tenant = await factory.tenant()
    await factory.billing.backdate_tenant(tenant.id, at("2026-08-01T00:00:00"))
    await deployment.run("2026-10-01T00:00:00Z")
    path, headers = f"{tenant.path}/invoices", bearer(tenant.readonly_key)

    first = await deployment.client.get(path, headers=headers)
    assert first.status_code == 200, first.text
    listed = first.json()["items"]
    assert len(listed) == 2
    assert {item["status"]["phase"] for item in listed} == {"Draft"}
    assert (await deployment.client.get(path, headers=headers)).content == first.content

    async with database.transaction() as session:
        (invoice_id,) = (
            await session.execute(select(Invoice.id).where(Invoice.name == listed[0]["name"]))
        ).one()
        advanced = await BillingRepository.from_session(session).advance_invoice(
            invoice_id, InvoicePhase.paid, utcnow(), {}
        )
        assert advanced
    after = (await deployment.client.get(path, headers=headers)).json()["items"]
    assert [item["status"]["phase"] for item in after] == ["Paid", "Draft"]
    assert int(after[0]["resourceVersion"]) > int(listed[0]["resourceVersion"])
    assert after[1] == listed[1]
    single = await deployment.client.get(f"{path}/{listed[0]['name']}", headers=headers)
    assert single.json() == after[0]


async def test_invoice_rows_hold_the_values_and_types_a_session_reads(
    billing: BillingFactoryFn, factory: Factory, database: Database
) -> None:
    """Amounts kept as decimal strings come back as Decimal, periods as UTC timestamps,
    conditions as documents: the same values and types as SQLAlchemy's own execution."""
    deployment = await billing()
    tenant = await factory.tenant()
    await factory.billing.backdate_tenant(tenant.id, at("2026-08-01T00:00:00"))
    await deployment.run("2026-10-01T00:00:00Z")
    _, *versions = await agree(database, snapshot_of(invoice_listing_of(tenant.id, no_documents)))
    ids = [row.id for row in versions]
    assert len(ids) == 2

    async def invoices(reads: Reads) -> Sequence[ReadRow]:
        found = await read_invoices(reads, tenant.id, ids)
        return [invoice for invoice, _ in found] + [line for _, lines in found for line in lines]

    rows = await agree(database, invoices)
    assert any(isinstance(value, Decimal) for row in rows for value in row)
