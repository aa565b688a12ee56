"""Signed transaction events about someone else's transaction never settle an invoice.

Paddle signs every event of the account, checkouts that any customer starts included, and a
checkout carries whatever custom data the buyer's page passes: a customer can pay 1 cent
with another tenant's invoice id in it. An event moves an invoice only for the invoice's
own transaction, or one of the tenant's customer, in the invoice's currency, for its net
amount; anything else is recorded as refused, logged, and leaves the invoice as it was.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog
from sqlalchemy import select

from tenantplane.billing.models import Invoice, ProviderEvent
from tenantplane.db.engine import Database
from tests.billing.conftest import DEADLINE_SECONDS, BillingFactoryFn, paddle_overrides
from tests.billing.test_paddle import SEPTEMBER_END, only_invoice, september_tenant
from tests.billing.test_webhooks import all_events_applied, billed_invoice, deliver
from tests.conftest import TEST_SECRET
from tests.contract.server import TENANTPLANE, served, server_env
from tests.factories import Factory
from tests.fakes.paddle import FakePaddle
from tests.http_client import bearer

# September's invoice: 30.00 EUR of platform fee, in cents.
NET_CENTS = "3000"


async def outcome_of(database: Database, event_body: bytes) -> str:
    event_id = json.loads(event_body)["event_id"]
    async with database.sessionmaker() as session:
        statement = select(ProviderEvent.outcome).where(ProviderEvent.event_id == event_id)
        return str((await session.execute(statement)).scalar_one())


async def invoice_uid(database: Database, name: str) -> str:
    async with database.sessionmaker() as session:
        statement = select(Invoice.uid).where(Invoice.name == name)
        return str((await session.execute(statement)).scalar_one())


async def test_a_foreign_transaction_naming_a_billed_invoice_changes_nothing(
    billing: BillingFactoryFn, factory: Factory, paddle: FakePaddle, database: Database
) -> None:
    deployment, tenant, invoice = await billed_invoice(billing, factory, paddle)
    own = invoice["providerTransactionID"]
    custom_data = paddle.transaction(own)["custom_data"]
    stranger, _ = paddle.add_customer()
    # Another customer pays 1 cent through a checkout carrying this invoice's custom data.
    foreign = paddle.checkout(stranger, "1", "EUR", custom_data)
    body = paddle.event("transaction.completed", paddle.settle(foreign))
    with structlog.testing.capture_logs() as logs:
        await deliver(deployment, paddle, body)
        await all_events_applied(database)

    outcome = await outcome_of(database, body)
    assert outcome.startswith("refused: another transaction"), outcome
    [warning] = [entry for entry in logs if entry["event"].startswith("payment event refused")]
    assert warning["log_level"] == "warning"
    assert warning["invoice"] == invoice["name"]
    assert warning["transaction"] == foreign
    unchanged = await only_invoice(deployment, tenant)
    assert unchanged["status"]["phase"] == "Billed"
    assert unchanged["providerTransactionID"] == own
    assert unchanged["resourceVersion"] == invoice["resourceVersion"]
    receipt_path = f"{tenant.path}/invoices/{invoice['name']}/receipt"
    receipt = await deployment.client.get(receipt_path, headers=bearer(tenant.admin_key))
    assert receipt.status_code == 409

    # The invoice's own payment still settles it, and its receipt is its own PDF.
    await deliver(deployment, paddle, paddle.event("transaction.completed", paddle.settle(own)))
    await all_events_applied(database)
    paid = await only_invoice(deployment, tenant)
    assert (paid["status"]["phase"], paid["providerTransactionID"]) == ("Paid", own)
    receipt = await deployment.client.get(receipt_path, headers=bearer(tenant.admin_key))
    assert f"/invoices/{own}.pdf" in receipt.json()["url"]


@pytest.mark.parametrize(
    ("payer", "currency", "amount", "expected"),
    [
        ("stranger", "EUR", NET_CENTS, "refused: customer is not the tenant's"),
        ("tenant", "USD", NET_CENTS, "refused: currency 'USD' is not EUR"),
        ("tenant", "EUR", "1", "refused: amount 0.01 is not 30.00"),
        ("tenant", "EUR", "2999", "refused: amount 29.99 is not 30.00"),
        # The control: the invoice's own charge, whose answer never arrived, is adopted.
        ("tenant", "EUR", NET_CENTS, "applied"),
    ],
)
async def test_an_uncharged_invoice_is_settled_only_by_its_customer_currency_and_amount(
    billing: BillingFactoryFn,
    factory: Factory,
    paddle: FakePaddle,
    database: Database,
    payer: str,
    currency: str,
    amount: str,
    expected: str,
) -> None:
    deployment = await billing(**paddle_overrides(paddle), run_reconcilers=True)
    tenant = await september_tenant(factory)
    # No address in Paddle: the invoice cannot be charged and stays Draft without a
    # transaction, so an event can find it only by the invoice id in its custom data.
    customer, _ = paddle.add_customer(addresses=0)
    await factory.billing.link(tenant.name, customer)
    await deployment.run(SEPTEMBER_END)
    draft = await only_invoice(deployment, tenant)
    assert (draft["status"]["phase"], draft["providerTransactionID"]) == ("Draft", "")
    custom_data = {"tenantplane_invoice_uid": await invoice_uid(database, draft["name"])}
    who = customer if payer == "tenant" else paddle.add_customer()[0]
    transaction = paddle.checkout(who, amount, currency, custom_data)

    body = paddle.event("transaction.completed", paddle.settle(transaction))
    await deliver(deployment, paddle, body)
    await all_events_applied(database)

    outcome = await outcome_of(database, body)
    assert outcome.startswith(expected), outcome
    after: dict[str, Any] = await only_invoice(deployment, tenant)
    if expected == "applied":
        assert (after["status"]["phase"], after["providerTransactionID"]) == ("Paid", transaction)
    else:
        assert after == draft


async def test_a_served_process_refuses_a_foreign_transaction(
    tmp_path: Path, paddle: FakePaddle, plans_file: Path
) -> None:
    """The issue's case end to end: `tenantplane serve`, `billing run` and Paddle's signed
    webhooks over HTTP; another customer's 1-cent checkout names the tenant's invoice."""
    env = {
        "TENANTPLANE_PLANS_FILE": str(plans_file),
        "TENANTPLANE_BILLING_PROVIDER": "paddle",
        "TENANTPLANE_ALLOW_SIMULATED_BILLING": "true",
        "TENANTPLANE_PADDLE_API_URL": paddle.url,
        "TENANTPLANE_PADDLE_API_KEY": paddle.api_key,
        "TENANTPLANE_PADDLE_WEBHOOK_SECRET": paddle.webhook_secret,
        "TENANTPLANE_PADDLE_WEBHOOK_TOLERANCE_SECONDS": "300",
        "TENANTPLANE_PADDLE_TIMEOUT_SECONDS": "5",
    }
    with served(tmp_path, extra_env=env) as server:
        database = Database.connect(server_env(tmp_path)["TENANTPLANE_DATABASE_URL"])
        try:
            factory = Factory(database, TEST_SECRET.encode())
            tenant_id = await tenant_id_of(database, server.tenant)
            await factory.billing.backdate_tenant(tenant_id, datetime(2026, 9, 1, tzinfo=UTC))
            customer, _ = paddle.add_customer()
            address = paddle.state.addresses[customer][0]["id"]
            await factory.billing.link(server.tenant, customer, address_id=address)
            process_env = {**server_env(tmp_path), **env}
            ran = await asyncio.to_thread(
                subprocess.run,
                [TENANTPLANE, "billing", "run", "--now", SEPTEMBER_END, "--json"],
                env=process_env,
                capture_output=True,
                check=False,
            )
            assert ran.returncode == 0, ran.stderr.decode()
            async with httpx.AsyncClient(
                base_url=f"{server.base_url}/api/v1", headers=bearer(server.admin_key)
            ) as client:
                invoice = await served_invoice(client, server.tenant, "Billed")
                own = invoice["providerTransactionID"]
                stranger, _ = paddle.add_customer()
                custom_data = paddle.transaction(own)["custom_data"]
                foreign = paddle.checkout(stranger, "1", "EUR", custom_data)
                body = paddle.event("transaction.completed", paddle.settle(foreign))
                delivered = await client.post(
                    "/webhooks/paddle", content=body, headers=paddle.signed_headers(body)
                )
                assert delivered.status_code == 200, delivered.text
                await all_events_applied(database)
                assert (await outcome_of(database, body)).startswith("refused: another")
                unchanged = await served_invoice(client, server.tenant, "Billed")
                assert unchanged["providerTransactionID"] == own
                assert unchanged["resourceVersion"] == invoice["resourceVersion"]
        finally:
            await database.dispose()
        assert "payment event refused" in server.log.read_text()


async def tenant_id_of(database: Database, name: str) -> int:
    from tenantplane.tenant.models import Tenant

    async with database.sessionmaker() as session:
        statement = select(Tenant.id).where(Tenant.name == name)
        return int((await session.execute(statement)).scalar_one())


async def served_invoice(client: httpx.AsyncClient, tenant: str, phase: str) -> dict[str, Any]:
    """The tenant's only invoice once it is in ``phase`` (the server charges it)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_SECONDS
    while True:
        response = await client.get(f"/tenants/{tenant}/invoices")
        items = response.json()["items"]
        if items and items[0]["status"]["phase"] == phase:
            return dict(items[0])
        assert loop.time() < deadline, f"the invoice never became {phase}: {items}"
        await asyncio.sleep(0.1)
