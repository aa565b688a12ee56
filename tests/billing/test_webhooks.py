"""POST /webhooks/paddle: signatures verified for real (Paddle-Signature: ts=…;h1=…,
HMAC-SHA256 over `ts:body`), each event stored once, applied asynchronously, and never moving
an invoice backwards."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from sqlalchemy import func, select

from tenantplane.billing.models import ProviderEvent
from tenantplane.db.engine import Database
from tests.billing.conftest import DEADLINE_SECONDS, Billing, BillingFactoryFn, paddle_overrides
from tests.billing.test_paddle import SEPTEMBER_END, only_invoice, september_tenant
from tests.factories import Factory, TenantFixture
from tests.fakes.paddle import FakePaddle
from tests.http_client import api_client, bearer


async def billed_invoice(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle
) -> tuple[Billing, TenantFixture, dict[str, Any]]:
    deployment = await billing(**paddle_overrides(paddle), run_reconcilers=True)
    tenant = await september_tenant(factory, paddle)
    await deployment.run(SEPTEMBER_END)
    # The CLI and the app's invoices reconciler may both go for the charge; one does it.
    name = f"{tenant.name}-20260901"
    invoice = await deployment.wait_for(
        f"{tenant.path}/invoices/{name}",
        bearer(tenant.admin_key),
        lambda doc: doc["status"]["phase"] == "Billed",
    )
    return deployment, tenant, invoice


async def deliver(deployment: Billing, paddle: FakePaddle, body: bytes) -> dict[str, Any]:
    response = await deployment.client.post(
        "/webhooks/paddle", content=body, headers=paddle.signed_headers(body)
    )
    assert response.status_code == 200, response.text
    document: dict[str, Any] = response.json()
    return document


async def all_events_applied(database: Database) -> None:
    """Wait until the billing-events reconciler has applied every stored event."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_SECONDS
    statement = select(func.count()).where(ProviderEvent.processed_at.is_(None))
    while True:
        async with database.sessionmaker() as session:
            if (await session.execute(statement)).scalar() == 0:
                return
        assert loop.time() < deadline, "webhook events were never applied"
        await asyncio.sleep(0.05)


async def test_completed_event_marks_the_invoice_paid_with_tax_and_number(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle
) -> None:
    deployment, tenant, invoice = await billed_invoice(billing, factory, paddle)
    data = paddle.settle(invoice["providerTransactionID"], "completed")
    assert await deliver(deployment, paddle, paddle.event("transaction.completed", data)) == {
        "received": True,
        "duplicate": False,
    }
    path = f"{tenant.path}/invoices/{invoice['name']}"
    paid = await deployment.wait_for(
        path, bearer(tenant.admin_key), lambda doc: doc["status"]["phase"] == "Paid"
    )
    # The fake taxes at 19%: 30.00 net → 5.70 tax, 35.70 total, as Paddle reports them.
    assert paid["status"]["tax"] == "5.70"
    assert paid["status"]["total"] == "35.70"
    assert paid["status"]["subtotal"] == "30.00"
    assert paid["status"]["providerInvoiceNumber"] == data["invoice_number"]
    assert int(paid["resourceVersion"]) > int(invoice["resourceVersion"])


async def test_duplicates_are_stored_and_applied_once(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle, database: Database
) -> None:
    deployment, tenant, invoice = await billed_invoice(billing, factory, paddle)
    data = paddle.settle(invoice["providerTransactionID"], "past_due")
    body = paddle.event("transaction.past_due", data)
    assert (await deliver(deployment, paddle, body))["duplicate"] is False
    assert (await deliver(deployment, paddle, body))["duplicate"] is True
    await all_events_applied(database)
    async with database.sessionmaker() as session:
        stored = (await session.execute(select(ProviderEvent))).scalars().all()
    assert len(stored) == 1
    assert stored[0].outcome.startswith("applied")
    past_due = await only_invoice(deployment, tenant)
    assert past_due["status"]["phase"] == "PastDue"
    # PastDue with a transaction: a receipt exists.
    receipt = await deployment.client.get(
        f"{tenant.path}/invoices/{invoice['name']}/receipt", headers=bearer(tenant.admin_key)
    )
    assert receipt.status_code == 200


async def test_events_out_of_order_never_move_an_invoice_backwards(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle, database: Database
) -> None:
    deployment, tenant, invoice = await billed_invoice(billing, factory, paddle)
    transaction = invoice["providerTransactionID"]
    past_due = paddle.settle(transaction, "past_due")
    completed = paddle.settle(transaction, "completed")
    # Delivered newest first: completed (12:00), then past_due (10:00), then billed (09:00).
    await deliver(
        deployment,
        paddle,
        paddle.event("transaction.completed", completed, occurred_at="2026-10-03T12:00:00Z"),
    )
    await all_events_applied(database)
    await deliver(
        deployment,
        paddle,
        paddle.event("transaction.past_due", past_due, occurred_at="2026-10-03T10:00:00Z"),
    )
    await deliver(
        deployment,
        paddle,
        paddle.event("transaction.billed", past_due, occurred_at="2026-10-03T09:00:00Z"),
    )
    # A failed payment reported after the payment: Paid is final.
    await deliver(
        deployment,
        paddle,
        paddle.event("transaction.payment_failed", past_due, occurred_at="2026-10-04T09:00:00Z"),
    )
    await all_events_applied(database)
    final = await only_invoice(deployment, tenant)
    assert final["status"]["phase"] == "Paid"
    assert final["status"]["total"] == "35.70"


async def test_past_due_then_paid_moves_forwards(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle, database: Database
) -> None:
    deployment, tenant, invoice = await billed_invoice(billing, factory, paddle)
    transaction = invoice["providerTransactionID"]
    await deliver(
        deployment,
        paddle,
        paddle.event("transaction.past_due", paddle.settle(transaction, "past_due")),
    )
    await all_events_applied(database)
    assert (await only_invoice(deployment, tenant))["status"]["phase"] == "PastDue"
    await deliver(
        deployment,
        paddle,
        paddle.event("transaction.paid", paddle.settle(transaction, "paid")),
    )
    await all_events_applied(database)
    assert (await only_invoice(deployment, tenant))["status"]["phase"] == "Paid"


async def test_signatures_are_verified(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle, database: Database
) -> None:
    deployment, tenant, invoice = await billed_invoice(billing, factory, paddle)
    data = paddle.settle(invoice["providerTransactionID"], "completed")
    body = paddle.event("transaction.completed", data)
    now = int(time.time())
    attempts = {
        "missing": {"Content-Type": "application/json"},
        "wrong secret": paddle.signed_headers(body, secret="not-the-secret"),
        "stale": paddle.signed_headers(body, timestamp=now - 600),
        "from the future": paddle.signed_headers(body, timestamp=now + 600),
        "garbage": {"Paddle-Signature": "nonsense"},
        "unknown key": {"Paddle-Signature": f"ts={now};h9=abc"},
    }
    # A body changed after signing.
    tampered = body.replace(b"completed", b"completed ")
    attempts["tampered"] = paddle.signed_headers(body)
    for number, (case, headers) in enumerate(attempts.items()):
        content = tampered if case == "tampered" else body
        async with api_client(deployment.app, ip=f"198.51.100.{number + 1}") as sender:
            response = await sender.post("/webhooks/paddle", content=content, headers=headers)
        assert response.status_code == 401, case
        assert response.json()["code"] == "WEBHOOK_SIGNATURE_INVALID", case
    async with database.sessionmaker() as session:
        assert (await session.execute(select(func.count(ProviderEvent.id)))).scalar() == 0
    assert (await only_invoice(deployment, tenant))["status"]["phase"] == "Billed"

    malformed = b'{"event_type": "transaction.completed"}'
    response = await deployment.client.post(
        "/webhooks/paddle", content=malformed, headers=paddle.signed_headers(malformed)
    )
    assert response.status_code == 400
    assert response.json()["field"] == "event_id"


async def test_webhooks_without_a_provider_are_503(billing: BillingFactoryFn) -> None:
    deployment = await billing()
    response = await deployment.client.post(
        "/webhooks/paddle", content=b"{}", headers={"Paddle-Signature": "ts=1;h1=00"}
    )
    assert response.status_code == 503
    assert response.json()["code"] == "BILLING_NOT_CONFIGURED"


async def test_a_charge_whose_answer_was_lost_is_matched_by_its_custom_data(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle
) -> None:
    deployment = await billing(**paddle_overrides(paddle), run_reconcilers=True)
    tenant = await september_tenant(factory, paddle)
    # Paddle creates the transaction; the client gives up before its answer comes.
    paddle.hold_next("POST", "/transactions", timeout=3.0)
    await deployment.run(SEPTEMBER_END)
    invoice = await only_invoice(deployment, tenant)
    assert (invoice["status"]["phase"], invoice["providerTransactionID"]) == ("Draft", "")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_SECONDS
    while not paddle.state.transactions:
        assert loop.time() < deadline
        await asyncio.sleep(0.05)
    [transaction] = paddle.state.transactions
    data = paddle.settle(transaction, "completed")
    await deliver(deployment, paddle, paddle.event("transaction.completed", data))
    paid = await deployment.wait_for(
        f"{tenant.path}/invoices/{invoice['name']}",
        bearer(tenant.admin_key),
        lambda doc: doc["status"]["phase"] == "Paid",
    )
    assert paid["providerTransactionID"] == transaction
    # Paid invoices are never charged again.
    assert (await deployment.run(SEPTEMBER_END))["chargesAttempted"] == 0
    assert len(paddle.calls("POST", "/transactions")) == 1


async def test_webhooks_have_their_own_budget_outside_the_auth_backoff(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle, database: Database
) -> None:
    """Paddle delivers from a few addresses that API clients may share: bad API keys from
    one of them must not block the deliveries, and bad signatures (the webhook's only
    authentication) do not count as failed API authentications."""
    deployment, tenant, invoice = await billed_invoice(billing, factory, paddle)
    limited = await billing(
        **paddle_overrides(paddle), auth_failure_threshold=2, webhook_rate_limit="4/minute"
    )
    app = limited.app
    wrong = {"Authorization": "Bearer svc_" + "D" * 43}
    data = paddle.settle(invoice["providerTransactionID"], "completed")
    async with api_client(app, ip="198.51.100.40") as shared:
        for _ in range(2):
            assert (await shared.get(tenant.path, headers=wrong)).status_code == 401
        assert (await shared.get(tenant.path, headers=wrong)).json()["code"] == "AUTH_BACKOFF"
        body = paddle.event("transaction.completed", data)
        delivered = await shared.post(
            "/webhooks/paddle", content=body, headers=paddle.signed_headers(body)
        )
        assert delivered.status_code == 200, delivered.text
        forged = await shared.post(
            "/webhooks/paddle", content=body, headers=paddle.signed_headers(body, secret="x")
        )
        assert forged.json()["code"] == "WEBHOOK_SIGNATURE_INVALID"
    await all_events_applied(database)
    assert (await only_invoice(deployment, tenant))["status"]["phase"] == "Paid"

    async with api_client(app, ip="198.51.100.41") as forger:
        for _ in range(3):
            response = await forger.post(
                "/webhooks/paddle", content=body, headers=paddle.signed_headers(body, secret="x")
            )
            assert response.status_code == 401
        # Three bad signatures, threshold two: the address is not in backoff.
        assert (await forger.get(tenant.path, headers=wrong)).status_code == 401
        fourth = await forger.post(
            "/webhooks/paddle", content=body, headers=paddle.signed_headers(body)
        )
        assert fourth.json() == {"received": True, "duplicate": True}
        # Its webhook budget (4/minute) is spent; its API budget is not.
        over = await forger.post(
            "/webhooks/paddle", content=body, headers=paddle.signed_headers(body)
        )
        assert over.status_code == 429
        assert over.json()["code"] == "RATE_LIMITED"
        assert int(over.headers["Retry-After"]) >= 1
        fine = await forger.get(tenant.path, headers=bearer(tenant.admin_key))
        assert fine.status_code == 200
