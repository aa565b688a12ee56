"""What happens when an endpoint fails: retries with the same id, the run of failures and
its end, the firewall at delivery time, disabling after 3 days of failures (and at once by an
admin), deletion."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import httpx
from sqlalchemy import func, select, update

from tenantplane.db.base import utcnow
from tenantplane.db.engine import Database
from tenantplane.event.webhook.models import Webhook, WebhookDelivery
from tests.cluster.polling import poll
from tests.conftest import make_settings
from tests.event.webhook.conftest import (
    LOOPBACK_ALLOWED,
    at,
    create_secret,
    create_webhook,
    of_type,
    wait_for_deliveries,
)
from tests.event.webhook.receiver import Receiver
from tests.factories import Factory
from tests.http_client import api_client, bearer, running_app


async def test_a_failed_attempt_is_retried_with_the_same_id(
    client: httpx.AsyncClient, factory: Factory, receiver: Receiver, database: Database
) -> None:
    tenant = await factory.tenant()
    receiver.answer("/flaky", 500, 302)
    hook = await create_webhook(client, tenant, f"{receiver.url}/flaky", ["secret.create"])
    await create_secret(client, tenant, "db")

    attempts = await receiver.wait_for("/flaky", lambda found: len(found) == 3, "three attempts")
    assert len({request.id for request in attempts}) == 1
    assert len({request.body for request in attempts}) == 1
    for request in attempts:
        request.verified(hook["secret"])
    [delivery] = await wait_for_deliveries(
        client,
        tenant,
        hook["id"],
        lambda items: items[0]["state"] == "succeeded",
        "the delivery succeeded",
    )
    assert (delivery["attempts"], delivery["lastStatusCode"]) == (3, 200)
    detail = await client.get(
        f"{tenant.path}/webhooks/{hook['id']}/deliveries/{delivery['id']}",
        headers=bearer(tenant.admin_key),
    )
    history = detail.json()["history"]
    assert [entry["statusCode"] for entry in history] == [500, 302, 200]
    assert history[0]["error"] == "answered 500"
    assert history[1]["error"] == "answered 302: redirects are not followed"
    # The redirect was not followed.
    assert receiver.at("/elsewhere") == []
    # The success ended the webhook's run of failures.
    read = await client.get(
        f"{tenant.path}/webhooks/{hook['id']}", headers=bearer(tenant.admin_key)
    )
    assert "failingSince" not in read.json()


async def test_a_pending_delivery_shows_its_next_attempt_and_failing_since(
    client: httpx.AsyncClient, factory: Factory, receiver: Receiver
) -> None:
    tenant = await factory.tenant()
    receiver.answer("/down", *([503] * 1000))
    hook = await create_webhook(client, tenant, f"{receiver.url}/down", ["secret.create"])
    await create_secret(client, tenant, "db")
    [delivery] = await wait_for_deliveries(
        client,
        tenant,
        hook["id"],
        lambda items: bool(items) and items[0]["attempts"] >= 2,
        "two failed attempts",
    )
    assert delivery["state"] == "pending"
    assert delivery["lastStatusCode"] == 503
    assert delivery["lastError"] == "answered 503"
    assert at(delivery["nextAttemptAt"]) >= at(delivery["lastAttemptAt"])
    read = await client.get(
        f"{tenant.path}/webhooks/{hook['id']}", headers=bearer(tenant.admin_key)
    )
    assert at(read.json()["failingSince"]) <= at(delivery["lastAttemptAt"])
    assert read.json()["enabled"] is True


async def test_a_destination_the_firewall_refuses_gets_nothing(
    database: Database, database_url: str, tmp_path: Path, factory: Factory, receiver: Receiver
) -> None:
    """A webhook to loopback made while the operator allowed it, delivered by a worker of
    a deployment that blocks private destinations (as a name that now resolves to one):
    every attempt fails, refused, and nothing reaches the receiver."""
    tenant = await factory.tenant()
    allowed = make_settings(database_url, tmp_path, run_reconcilers=False, **LOOPBACK_ALLOWED)
    async with running_app(allowed) as app, api_client(app) as client:
        hook = await create_webhook(client, tenant, f"{receiver.url}/blocked", ["nothing.here"])
    blocking = make_settings(
        database_url, tmp_path, **{**LOOPBACK_ALLOWED, "alerting_firewall_block_private": True}
    )
    async with running_app(blocking) as app, api_client(app) as client:
        answer = await client.post(
            f"{tenant.path}/webhooks/{hook['id']}/ping", headers=bearer(tenant.admin_key)
        )
        assert answer.status_code == 202
        [delivery] = await wait_for_deliveries(
            client,
            tenant,
            hook["id"],
            lambda items: bool(items) and items[0]["attempts"] >= 2,
            "two refused attempts",
        )
    assert delivery["lastError"].startswith("refused by the firewall, nothing sent: ")
    assert "private, loopback" in delivery["lastError"]
    assert "lastStatusCode" not in delivery
    assert receiver.at("/blocked") == []


async def test_an_endpoint_failing_for_three_days_is_disabled(
    client: httpx.AsyncClient, factory: Factory, receiver: Receiver, database: Database
) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    receiver.answer("/dead", *([500] * 1000))
    hook = await create_webhook(client, tenant, f"{receiver.url}/dead", ["secret.*"])
    watcher = await create_webhook(client, tenant, f"{receiver.url}/watch", ["webhook.disabled"])
    await create_secret(client, tenant, "db")
    await receiver.wait_for("/dead", lambda found: len(found) >= 1, "a failed attempt")
    # Its run of failures began three days ago (the database's clock moved for it).
    async with database.transaction() as session:
        await session.execute(
            update(Webhook)
            .where(Webhook.id == hook["id"])
            .values(failing_since=utcnow() - timedelta(days=3, minutes=1))
        )

    disabled = await poll(
        client,
        f"{tenant.path}/webhooks/{hook['id']}",
        headers,
        lambda response: response.json()["enabled"] is False,
        "the webhook disabled",
    )
    assert "3 days" in disabled.json()["disabledReason"]
    events = await client.get(
        f"{tenant.path}/events", params={"action": "webhook.disabled"}, headers=headers
    )
    [event] = events.json()["items"]
    assert (event["type"], event["resource"], event["actor"]) == (
        "platform",
        {"kind": "webhook", "name": hook["id"]},
        {"kind": "system"},
    )
    assert event["data"]["reason"] == disabled.json()["disabledReason"]
    # Told to the tenant's other webhooks.
    [told] = await receiver.wait_for("/watch", of_type("webhook.disabled"), "the platform event")
    assert told.verified(watcher["secret"])["data"]["id"] == event["id"]
    # Its deliveries stop: the pending one ends cancelled, and nothing more is sent.
    [delivery] = await wait_for_deliveries(
        client,
        tenant,
        hook["id"],
        lambda items: items[0]["state"] == "cancelled",
        "the pending delivery cancelled",
    )
    assert "nextAttemptAt" not in delivery
    refused = await client.post(f"{tenant.path}/webhooks/{hook['id']}/ping", headers=headers)
    assert (refused.status_code, refused.json()["code"]) == (409, "WEBHOOK_DISABLED")
    # Enabled again, it starts afresh: no reason, no failures, only new events.
    enabled = await client.patch(
        f"{tenant.path}/webhooks/{hook['id']}", json={"enabled": True}, headers=headers
    )
    assert enabled.status_code == 200
    assert "disabledReason" not in enabled.json()
    assert "failingSince" not in enabled.json()


async def test_deleting_a_webhook_stops_its_deliveries(
    client: httpx.AsyncClient, factory: Factory, receiver: Receiver, database: Database
) -> None:
    tenant = await factory.tenant()
    receiver.answer("/gone", *([500] * 1000))
    hook = await create_webhook(client, tenant, f"{receiver.url}/gone", ["secret.*"])
    await create_secret(client, tenant, "db")
    await receiver.wait_for("/gone", lambda found: len(found) >= 1, "a failed attempt")
    deleted = await client.delete(
        f"{tenant.path}/webhooks/{hook['id']}", headers=bearer(tenant.admin_key)
    )
    assert deleted.status_code == 204
    async with database.transaction() as session:
        left = await session.execute(
            select(func.count())
            .select_from(WebhookDelivery)
            .where(WebhookDelivery.webhook_id == hook["id"])
        )
        assert left.scalar_one() == 0


async def test_disabling_cancels_the_pending_deliveries_at_once(
    database: Database, database_url: str, tmp_path: Path, factory: Factory, receiver: Receiver
) -> None:
    """With an hour between attempts, a disabled webhook's pending delivery still ends at
    once: cancelled, nothing more sent."""
    tenant = await factory.tenant()
    receiver.answer("/paused", 500)
    slow = make_settings(
        database_url, tmp_path, **{**LOOPBACK_ALLOWED, "webhook_retry_base_seconds": 3600}
    )
    async with running_app(slow) as app, api_client(app) as client:
        hook = await create_webhook(client, tenant, f"{receiver.url}/paused", ["secret.*"])
        await create_secret(client, tenant, "db")
        [pending] = await wait_for_deliveries(
            client,
            tenant,
            hook["id"],
            lambda items: bool(items) and items[0]["attempts"] == 1,
            "the first failed attempt",
        )
        assert pending["state"] == "pending"
        assert at(pending["nextAttemptAt"]) > at(pending["lastAttemptAt"])
        patched = await client.patch(
            f"{tenant.path}/webhooks/{hook['id']}",
            json={"enabled": False},
            headers=bearer(tenant.admin_key),
        )
        assert patched.status_code == 200
        [cancelled] = await wait_for_deliveries(
            client,
            tenant,
            hook["id"],
            lambda items: items[0]["state"] == "cancelled",
            "the delivery cancelled",
        )
    assert cancelled["attempts"] == 1
    assert cancelled["lastError"] == "the webhook is disabled: not sent"
    assert len(receiver.at("/paused")) == 1
