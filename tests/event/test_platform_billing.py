"""Platform events of billing: invoices issued (``tenantplane billing run``, the billing-cycle
reconciler), paid and past due (the charge's answer, Paddle's webhooks applied by the
billing-events reconciler), the tenant suspended and resumed by its subscription's news;
and the operator's billing commands as audit events. Read back through GET /events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tenantplane.billing.context import BillingContext
from tenantplane.billing.reconciler import CycleReconciler
from tenantplane.db.engine import Database
from tenantplane.reconcile.runner import ReconcilerRunner
from tests.billing.conftest import (  # noqa: F401 (fixtures)
    BillingFactoryFn,
    billing,
    paddle,
    paddle_overrides,
    plans_file,
)
from tests.billing.test_paddle import SEPTEMBER_END, only_invoice, september_tenant
from tests.billing.test_subscription_events import news, subscribed_tenant
from tests.billing.test_webhooks import all_events_applied, billed_invoice, deliver
from tests.event.stream import events
from tests.factories import Factory, TenantFixture
from tests.fakes.paddle import FakePaddle
from tests.http_client import bearer

SYSTEM = {"kind": "system"}
OPERATOR = {"kind": "operator"}
SEPTEMBER = {"start": "2026-09-01T00:00:00Z", "end": "2026-10-01T00:00:00Z"}


async def recorded(client: Any, tenant: TenantFixture, **query: str) -> list[dict[str, Any]]:
    """The tenant's events matching ``query``, oldest first (without id, time, hash)."""
    found = await events(client, tenant, **query)
    shown = ("type", "action", "resource", "actor", "data")
    return [{key: event[key] for key in shown} for event in reversed(found)]


def invoice_event(action: str, name: str, **data: Any) -> dict[str, Any]:
    return {
        "type": "platform",
        "action": action,
        "resource": {"kind": "invoice", "name": name},
        "actor": SYSTEM,
        "data": data,
    }


async def test_an_invoice_issued_then_past_due_then_paid(
    billing: BillingFactoryFn,  # noqa: F811
    factory: Factory,
    paddle: FakePaddle,  # noqa: F811
    database: Database,
) -> None:
    deployment, tenant, invoice = await billed_invoice(billing, factory, paddle)
    name = invoice["name"]
    transaction = invoice["providerTransactionID"]
    issued = invoice_event(
        "invoice.issued", name, billingPeriod=SEPTEMBER, currency="EUR", total="30.00"
    )
    # Charged (Billed): not an event of its own.
    assert await recorded(deployment.client, tenant, kind="invoice") == [issued]

    past_due = paddle.settle(transaction, "past_due")
    await deliver(deployment, paddle, paddle.event("transaction.past_due", past_due))
    await all_events_applied(database)
    completed = paddle.settle(transaction, "completed")
    await deliver(deployment, paddle, paddle.event("transaction.completed", completed))
    await all_events_applied(database)
    paid = await only_invoice(deployment, tenant)
    assert paid["status"]["phase"] == "Paid"
    expected = [
        issued,
        invoice_event("invoice.past_due", name, currency="EUR", total="30.00"),
        # The total as Paddle settled it (its tax included).
        invoice_event("invoice.paid", name, currency="EUR", total=paid["status"]["total"]),
    ]
    assert await recorded(deployment.client, tenant, kind="invoice") == expected

    # Later news of the same phase fills in details; older news changes nothing: no event.
    later = paddle.event("transaction.completed", completed, occurred_at="2030-01-01T00:00:00Z")
    await deliver(deployment, paddle, later)
    older = paddle.event("transaction.past_due", past_due, occurred_at="2026-10-01T00:00:00Z")
    await deliver(deployment, paddle, older)
    await all_events_applied(database)
    assert await recorded(deployment.client, tenant, kind="invoice") == expected


async def test_a_charge_answered_paid_records_the_invoice_paid(
    billing: BillingFactoryFn,  # noqa: F811
    factory: Factory,
    paddle: FakePaddle,  # noqa: F811
) -> None:
    """The invoices reconciler (run by `billing run`) records the charge's own answer."""
    deployment = await billing(**paddle_overrides(paddle))
    tenant = await september_tenant(factory, paddle)
    await deployment.cli("tenant", "credit", tenant.name, "100.00")
    await deployment.run(SEPTEMBER_END)
    invoice = await only_invoice(deployment, tenant)
    assert invoice["status"]["phase"] == "Paid"  # a charge of nothing is paid at once
    name = invoice["name"]
    assert await recorded(deployment.client, tenant, type="platform") == [
        invoice_event(
            "invoice.issued", name, billingPeriod=SEPTEMBER, currency="EUR", total="0.00"
        ),
        invoice_event("invoice.paid", name, currency="EUR", total="0.00"),
    ]
    # The operator's credit, audited as theirs.
    [credit] = await recorded(deployment.client, tenant, type="audit")
    assert credit == {
        "type": "audit",
        "action": "billing.credit.grant",
        "resource": {"kind": "tenant", "name": tenant.name},
        "actor": OPERATOR,
        "data": {"amount": "100.00"},
    }
    # A second run issues and charges nothing: nothing recorded.
    await deployment.run(SEPTEMBER_END)
    assert len(await recorded(deployment.client, tenant)) == 3


async def test_the_billing_cycle_reconciler_records_each_invoice_it_issues(
    billing: BillingFactoryFn,  # noqa: F811
    factory: Factory,
    database: Database,
) -> None:
    deployment = await billing()
    tenant = await factory.tenant()
    await factory.billing.backdate_tenant(tenant.id, datetime(2026, 9, 1, tzinfo=UTC))
    other = await factory.tenant()
    await factory.billing.backdate_tenant(other.id, datetime(2026, 10, 1, tzinfo=UTC))
    await factory.billing.billing_schedule(await database.clock.now() - timedelta(seconds=1))
    cycle = CycleReconciler(BillingContext.from_settings(deployment.settings))
    assert await ReconcilerRunner(database, cycle).run_once() == 1

    issued: dict[str, int] = {}
    for someone in (tenant, other):
        listed = await deployment.client.get(
            f"{someone.path}/invoices", headers=bearer(someone.readonly_key)
        )
        invoices = sorted(listed.json()["items"], key=lambda item: item["billingPeriod"]["start"])
        assert invoices, listed.text
        assert await recorded(deployment.client, someone) == [
            invoice_event(
                "invoice.issued",
                item["name"],
                billingPeriod=item["billingPeriod"],
                currency=item["status"]["currency"],
                total=item["status"]["total"],
            )
            for item in invoices
        ]
        issued[someone.name] = len(invoices)
    # The next run finds nothing ended: nothing more recorded.
    await factory.billing.billing_schedule(await database.clock.now() - timedelta(seconds=1))
    assert await ReconcilerRunner(database, cycle).run_once() == 1
    assert len(await recorded(deployment.client, tenant)) == issued[tenant.name]


async def test_subscription_news_suspends_and_resumes_the_tenant(
    billing: BillingFactoryFn,  # noqa: F811
    factory: Factory,
    paddle: FakePaddle,  # noqa: F811
    database: Database,
) -> None:
    deployment, tenant, customer, subscription = await subscribed_tenant(billing, factory, paddle)
    await news(
        deployment, paddle, database, "subscription.past_due", subscription, customer, "past_due"
    )
    await news(
        deployment, paddle, database, "subscription.updated", subscription, customer, "active"
    )
    await news(  # already active: nothing changes
        deployment, paddle, database, "subscription.updated", subscription, customer, "active"
    )

    def state(action: str) -> dict[str, Any]:
        return {
            "type": "platform",
            "action": action,
            "resource": {"kind": "tenant", "name": tenant.name},
            "actor": SYSTEM,
            "data": {"by": "payment"},
        }

    assert await recorded(deployment.client, tenant, kind="tenant") == [
        state("tenant.suspended"),
        state("tenant.resumed"),
    ]


async def test_linking_a_customer_is_audited_as_the_operators(
    billing: BillingFactoryFn,  # noqa: F811
    factory: Factory,
    paddle: FakePaddle,  # noqa: F811
) -> None:
    deployment = await billing(**paddle_overrides(paddle))
    tenant = await factory.tenant()
    customer, _ = paddle.add_customer()
    await deployment.cli("billing", "link", tenant.name, "--customer", customer)
    assert await recorded(deployment.client, tenant) == [
        {
            "type": "audit",
            "action": "billing.profile.link",
            "resource": {"kind": "tenant", "name": tenant.name},
            "actor": OPERATOR,
            "data": {"customerID": customer},
        }
    ]
    [event] = await events(deployment.client, tenant)
    # Not a request: no source address, request id or status.
    assert not {"sourceIp", "requestId", "status"} & set(event)
