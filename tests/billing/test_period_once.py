"""One invoice per tenant and period, whatever runs overlap (the database decides)."""

from __future__ import annotations

from datetime import UTC, datetime

from tenantplane.billing.context import BillingContext
from tenantplane.billing.cycle import issue_invoice
from tenantplane.billing.models import InvoiceKind
from tenantplane.billing.repository import BillingRepository
from tests.billing.conftest import BillingFactoryFn
from tests.factories import Factory
from tests.http_client import bearer

DECEMBER = datetime(2027, 12, 1, tzinfo=UTC)
JANUARY = datetime(2028, 1, 1, tzinfo=UTC)


async def test_a_run_that_read_before_another_committed_issues_no_second_invoice(
    billing: BillingFactoryFn, factory: Factory
) -> None:
    """Two overlapping `billing run`s: the second read "no invoice yet" before the first
    committed, then inserted its own for the same period (named -000000). Replayed here in
    that order: the second run's insert for the period finds the first's invoice."""
    deployment = await billing()
    tenant = await factory.tenant("t04")
    await factory.billing.backdate_tenant(tenant.id, DECEMBER)
    await deployment.cli("tenant", "credit", tenant.name, "5.00")
    first = await deployment.run("2028-01-01T00:00:00Z")
    assert [item["name"] for item in first["issued"]] == ["t04-20271201"]

    context = BillingContext.from_settings(deployment.settings)
    async with factory.database.transaction() as session:
        row = await BillingRepository.from_session(session).tenant(tenant.id)
        assert row is not None
        invoice, created = await issue_invoice(
            session, context, row, DECEMBER, JANUARY, InvoiceKind.regular, JANUARY
        )
    assert (invoice.name, created) == ("t04-20271201", False)

    response = await deployment.client.get(
        f"{tenant.path}/invoices", headers=bearer(tenant.admin_key)
    )
    assert [item["name"] for item in response.json()["items"]] == ["t04-20271201"]
    # The losing run added no credit use either: the balance is what the winner left.
    async with factory.database.transaction() as session:
        balance = await BillingRepository.from_session(session).credit_balance(tenant.id)
    assert balance == 0
