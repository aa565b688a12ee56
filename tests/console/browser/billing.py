"""Billing for the browser tests' server: Paddle is the loopback fake of tests/fakes/paddle.py
(run in this process), and a paid invoice is made as in production: the operator links the
tenant to its Paddle customer (when the server starts) and closes the period (`tenantplane
billing run`), which charges it; Paddle completes the transaction and says so by a signed
webhook."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from tests.console.browser.steps import ConsoleServer, wait_for_document
from tests.fakes.paddle import FakePaddle


def billing_env(paddle: FakePaddle) -> dict[str, str]:
    """The server's settings that charge through ``paddle``."""
    return {
        "TENANTPLANE_BILLING_PROVIDER": "paddle",
        # The simulator's clusters do not exist: charging for them is a demo's setting.
        "TENANTPLANE_ALLOW_SIMULATED_BILLING": "true",
        "TENANTPLANE_PADDLE_API_URL": paddle.url,
        "TENANTPLANE_PADDLE_API_KEY": paddle.api_key,
        "TENANTPLANE_PADDLE_WEBHOOK_SECRET": paddle.webhook_secret,
    }


def first_of_next_month() -> str:
    """A `billing run --now` that closes the tenant's first period (created this month)."""
    today = datetime.now(UTC).date()
    first = (today.replace(day=28) + timedelta(days=4)).replace(day=1)
    return f"{first.isoformat()}T00:00:00Z"


def link_to_paddle(server: ConsoleServer, paddle: FakePaddle) -> tuple[str, ...]:
    """The operator's command linking the tenant to a new customer of ``paddle``."""
    customer, _ = paddle.add_customer()
    address = paddle.state.addresses[customer][0]["id"]
    return ("billing", "link", server.tenant, "--customer", customer, "--address", address)


def paid_invoice(server: ConsoleServer, paddle: FakePaddle) -> dict[str, Any]:
    """The tenant's first invoice (the tenant linked to Paddle), charged and paid: its API
    document."""
    run = json.loads(server.operator("billing", "run", "--now", first_of_next_month(), "--json"))
    [issued] = run["issued"]
    path = f"/invoices/{issued['name']}"
    # The run charges at once (or the server's reconciler does, whichever leases it first).
    billed = wait_for_document(server, path, lambda doc: doc["status"]["phase"] == "Billed")
    completed = paddle.settle(str(billed["providerTransactionID"]), "completed")
    body = paddle.event("transaction.completed", completed)
    delivered = httpx.post(
        server.url("/api/v1/webhooks/paddle"), content=body, headers=paddle.signed_headers(body)
    )
    assert delivered.status_code == 200, delivered.text
    return wait_for_document(server, path, lambda doc: doc["status"]["phase"] == "Paid")
