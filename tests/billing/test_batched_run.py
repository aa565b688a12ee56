"""The billing run closes tenants in batches, a transaction each: a batch meeting another
run's work or a concurrent change still issues exactly one invoice per tenant and period."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import delete, select

from tenantplane.billing.context import BillingContext
from tenantplane.billing.cycle import BillingSubject, close_batch_periods, issue_invoice
from tenantplane.billing.models import Invoice, InvoiceKind
from tenantplane.billing.repository import BillingRepository
from tenantplane.tenant.models import Tenant
from tests.billing.conftest import Billing, BillingFactoryFn
from tests.factories import Factory, TenantFixture

DECEMBER = datetime(2027, 12, 1, tzinfo=UTC)
JANUARY = datetime(2028, 1, 1, tzinfo=UTC)
MARCH = datetime(2028, 3, 1, tzinfo=UTC)


async def december_tenant(factory: Factory, deployment: Billing, name: str) -> TenantFixture:
    tenant = await factory.tenant(name)
    await factory.billing.backdate_tenant(tenant.id, DECEMBER)
    await deployment.cli("tenant", "credit", tenant.name, "5.00")
    return tenant


def subject(tenant: TenantFixture) -> BillingSubject:
    return BillingSubject(tenant.id, tenant.name, "starter", DECEMBER)


async def invoice_names(factory: Factory, tenant: TenantFixture) -> list[str]:
    async with factory.database.transaction() as session:
        statement = select(Invoice.name).where(Invoice.tenant_id == tenant.id)
        return sorted((await session.execute(statement.order_by(Invoice.name))).scalars())


async def balance(factory: Factory, tenant: TenantFixture) -> object:
    async with factory.database.transaction() as session:
        return await BillingRepository.from_session(session).credit_balance(tenant.id)


async def test_a_batch_bills_the_tenants_another_run_left_and_catches_up_missed_months(
    billing: BillingFactoryFn, factory: Factory
) -> None:
    deployment = await billing()
    first = await december_tenant(factory, deployment, "b01")
    second = await december_tenant(factory, deployment, "b02")
    context = BillingContext.from_settings(deployment.settings)
    # Another run closed the first tenant's December (and used its credit) before this one.
    async with factory.database.transaction() as session:
        row = await BillingRepository.from_session(session).tenant(first.id)
        assert row is not None
        await issue_invoice(session, context, row, DECEMBER, JANUARY, InvoiceKind.regular, JANUARY)

    async with factory.database.transaction() as session:
        issued = await close_batch_periods(
            session, context, [subject(first), subject(second)], MARCH
        )
        names = [invoice.name for invoice in issued]

    assert names == ["b01-20280101", "b01-20280201", "b02-20271201", "b02-20280101", "b02-20280201"]
    assert await invoice_names(factory, first) == ["b01-20271201", "b01-20280101", "b01-20280201"]
    # Each tenant's credit was applied once, to its first invoice.
    assert await balance(factory, first) == 0
    assert await balance(factory, second) == 0
    async with factory.database.transaction() as session:
        applied = (await session.execute(select(Invoice.credits_applied))).scalars().all()
    assert sorted(applied) == [0] * 4 + [5, 5]


async def test_a_tenant_deleted_after_the_run_listed_it_leaves_the_rest_of_its_batch_billed(
    billing: BillingFactoryFn, factory: Factory
) -> None:
    deployment = await billing()
    gone = await december_tenant(factory, deployment, "b03")
    kept = await december_tenant(factory, deployment, "b04")
    context = BillingContext.from_settings(deployment.settings)
    async with factory.database.transaction() as session:
        await session.execute(delete(Tenant).where(Tenant.id == gone.id))

    async with factory.database.transaction() as session:
        issued = await close_batch_periods(
            session, context, [subject(gone), subject(kept)], JANUARY
        )
        names = [invoice.name for invoice in issued]

    assert names == ["b04-20271201"]
    assert await invoice_names(factory, kept) == ["b04-20271201"]


async def test_a_run_stopped_after_a_batch_is_completed_by_the_next_without_duplicates(
    billing: BillingFactoryFn, factory: Factory
) -> None:
    deployment = await billing()
    done = await december_tenant(factory, deployment, "b05")
    left = await december_tenant(factory, deployment, "b06")
    context = BillingContext.from_settings(deployment.settings)
    # The batch holding the first tenant committed; the run stopped before the next one.
    async with factory.database.transaction() as session:
        await close_batch_periods(session, context, [subject(done)], JANUARY)

    rerun = await deployment.run("2028-01-01T00:00:00Z")

    assert [item["name"] for item in rerun["issued"]] == ["b06-20271201"]
    assert await invoice_names(factory, done) == ["b05-20271201"]
    assert await invoice_names(factory, left) == ["b06-20271201"]
    assert await balance(factory, done) == 0
    assert await balance(factory, left) == 0
