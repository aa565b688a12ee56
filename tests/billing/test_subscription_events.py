"""Paddle's subscription news suspends and resumes tenants: past due makes the tenant
read-only, paid up again lifts that suspension (never an operator's), older news changes
nothing, and a cancelled tenant stays cancelled. Delivered as signed webhooks over HTTP and
applied by the billing-events reconciler."""

from __future__ import annotations

from sqlalchemy import select

from tenantplane.billing.models import ProviderEvent
from tenantplane.db.engine import Database
from tests.billing.conftest import Billing, BillingFactoryFn, paddle_overrides
from tests.billing.test_webhooks import all_events_applied, deliver
from tests.factories import Factory, TenantFixture
from tests.fakes.paddle import FakePaddle
from tests.http_client import bearer


async def subscribed_tenant(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle
) -> tuple[Billing, TenantFixture, str, str]:
    deployment = await billing(**paddle_overrides(paddle), run_reconcilers=True)
    tenant = await factory.tenant()
    customer, [subscription] = paddle.add_customer(subscriptions=1)
    await factory.billing.link(tenant.name, customer, subscription)
    return deployment, tenant, customer, subscription


async def news(
    deployment: Billing,
    paddle: FakePaddle,
    database: Database,
    event_type: str,
    subscription: str,
    customer: str,
    status: str,
    occurred_at: str | None = None,
) -> str:
    """Deliver one subscription event and wait until it is applied; returns its outcome."""
    data = paddle.subscription(subscription, customer, status)
    body = paddle.event(event_type, data, occurred_at=occurred_at)
    await deliver(deployment, paddle, body)
    await all_events_applied(database)
    async with database.sessionmaker() as session:
        events = (await session.execute(select(ProviderEvent))).scalars().all()
    return next(event.outcome for event in events if event.payload["data"] == data)


async def state_of(deployment: Billing, tenant: TenantFixture) -> str:
    response = await deployment.client.get(tenant.path, headers=bearer(tenant.readonly_key))
    state: str = response.json()["state"]
    return state


async def create_key(deployment: Billing, tenant: TenantFixture) -> tuple[int, str | None]:
    response = await deployment.client.post(
        f"{tenant.path}/apikeys",
        json={"displayName": "ci", "role": "readonly"},
        headers=bearer(tenant.admin_key),
    )
    return response.status_code, response.json().get("code")


async def test_past_due_suspends_and_active_again_resumes(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle, database: Database
) -> None:
    deployment, tenant, customer, subscription = await subscribed_tenant(billing, factory, paddle)
    outcome = await news(
        deployment, paddle, database, "subscription.past_due", subscription, customer, "past_due"
    )
    assert outcome.startswith("applied")
    assert await state_of(deployment, tenant) == "suspended"
    assert await create_key(deployment, tenant) == (403, "TENANT_SUSPENDED")
    # The way out stays open: the portal's payment-method form for this subscription.
    portal = await deployment.client.post(
        f"{tenant.path}/billing/portal-session", headers=bearer(tenant.admin_key)
    )
    assert portal.status_code == 200, portal.text
    assert subscription in portal.json()["updatePaymentMethodURL"]

    await news(
        deployment, paddle, database, "subscription.updated", subscription, customer, "active"
    )
    assert await state_of(deployment, tenant) == "active"
    assert (await create_key(deployment, tenant))[0] == 201


async def test_payment_news_never_lifts_an_operators_suspension(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle, database: Database
) -> None:
    deployment, tenant, customer, subscription = await subscribed_tenant(billing, factory, paddle)
    await deployment.cli("tenant", "suspend", tenant.name)
    await news(
        deployment, paddle, database, "subscription.past_due", subscription, customer, "past_due"
    )
    outcome = await news(
        deployment, paddle, database, "subscription.activated", subscription, customer, "active"
    )
    assert outcome.startswith("recorded")
    assert await state_of(deployment, tenant) == "suspended"
    assert await create_key(deployment, tenant) == (403, "TENANT_SUSPENDED")
    await deployment.cli("tenant", "resume", tenant.name)
    assert await state_of(deployment, tenant) == "active"


async def test_older_news_changes_nothing(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle, database: Database
) -> None:
    deployment, tenant, customer, subscription = await subscribed_tenant(billing, factory, paddle)
    await news(
        deployment,
        paddle,
        database,
        "subscription.updated",
        subscription,
        customer,
        "active",
        occurred_at="2026-11-20T12:00:00Z",
    )
    late = await news(
        deployment,
        paddle,
        database,
        "subscription.past_due",
        subscription,
        customer,
        "past_due",
        occurred_at="2026-11-20T10:00:00Z",
    )
    assert late.startswith("ignored")
    assert await state_of(deployment, tenant) == "active"


async def test_cancelled_and_unknown_subscriptions_are_left_alone(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle, database: Database
) -> None:
    deployment, tenant, customer, subscription = await subscribed_tenant(billing, factory, paddle)
    bystander = await factory.tenant()
    await deployment.cli("tenant", "cancel", tenant.name)
    outcome = await news(
        deployment, paddle, database, "subscription.updated", subscription, customer, "active"
    )
    assert outcome.startswith("ignored")
    assert await state_of(deployment, tenant) == "cancelled"

    stranger, [other] = paddle.add_customer(subscriptions=1)
    unknown = await news(
        deployment, paddle, database, "subscription.past_due", other, stranger, "past_due"
    )
    assert unknown == "ignored: no tenant for this subscription"
    paused = await news(
        deployment, paddle, database, "subscription.paused", subscription, customer, "paused"
    )
    assert paused.startswith("ignored")
    assert await state_of(deployment, bystander) == "active"
