"""Events delivered to a real receiver on loopback, by the app's own reconcilers (the
dispatcher and the delivery reconciler), signed as Standard Webhooks says and checked with
its library: what is sent to whom, redelivery, pings, rotation. Failures: test_failures.py."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from sqlalchemy import update
from standardwebhooks.webhooks import WebhookVerificationError

from tenantplane.db.base import utcnow
from tenantplane.db.engine import Database
from tenantplane.event.webhook.models import Webhook
from tests.cluster.polling import create_cluster, poll, wait_running
from tests.event.webhook.conftest import (
    add_member,
    at,
    create_secret,
    create_webhook,
    of_type,
    wait_for_deliveries,
)
from tests.event.webhook.receiver import Received, Receiver
from tests.factories import Factory
from tests.http_client import bearer


async def test_audit_events_arrive_signed(
    client: httpx.AsyncClient, factory: Factory, receiver: Receiver
) -> None:
    tenant = await factory.tenant()
    hook = await create_webhook(client, tenant, f"{receiver.url}/audit", ["secret.*"])
    await create_secret(client, tenant, "db")

    [request] = await receiver.wait_for("/audit", of_type("secret.create"), "secret.create")
    payload = request.verified(hook["secret"])
    assert request.headers["content-type"] == "application/json"
    assert request.headers["webhook-signature"].startswith("v1,")
    assert " " not in request.headers["webhook-signature"]
    # The message: the event's action, its time, and the event as the stream shows it.
    events = await client.get(
        f"{tenant.path}/events",
        params={"action": "secret.create"},
        headers=bearer(tenant.admin_key),
    )
    [event] = events.json()["items"]
    assert payload == {"type": "secret.create", "timestamp": event["time"], "data": event}
    assert request.id == event["id"]
    assert event["resource"] == {"kind": "secret", "name": "db"}
    # A signature made with another secret does not verify.
    other = await create_webhook(client, tenant, f"{receiver.url}/other", ["nothing.here"])
    with pytest.raises(WebhookVerificationError):
        request.verified(other["secret"])

    [delivery] = await wait_for_deliveries(
        client,
        tenant,
        hook["id"],
        lambda items: len(items) == 1 and items[0]["state"] == "succeeded",
        "the delivery succeeded",
    )
    assert delivery["eventId"] == event["id"]
    assert (delivery["eventType"], delivery["attempts"], delivery["lastStatusCode"]) == (
        "secret.create",
        1,
        200,
    )
    assert delivery["lastLatencyMs"] >= 0
    assert "nextAttemptAt" not in delivery
    assert "lastError" not in delivery
    detail = await client.get(
        f"{tenant.path}/webhooks/{hook['id']}/deliveries/{delivery['id']}",
        headers=bearer(tenant.admin_key),
    )
    assert detail.status_code == 200, detail.text
    [attempt] = detail.json()["history"]
    assert attempt["statusCode"] == 200
    assert attempt["at"] == delivery["lastAttemptAt"]


async def test_only_matching_events_are_delivered(
    client: httpx.AsyncClient, factory: Factory, receiver: Receiver
) -> None:
    tenant = await factory.tenant()
    exact = await create_webhook(client, tenant, f"{receiver.url}/exact", ["secret.create"])
    prefix = await create_webhook(client, tenant, f"{receiver.url}/prefix", ["member.*"])
    everything = await create_webhook(client, tenant, f"{receiver.url}/all", ["*"])
    await add_member(client, tenant, "reader@example.com")
    await create_secret(client, tenant, "db")
    await add_member(client, tenant, "writer@example.com")

    await receiver.wait_for("/exact", of_type("secret.create"), "the exact match")
    prefixed = await receiver.wait_for(
        "/prefix", lambda found: len(found) == 2, "the two member events"
    )
    assert sorted(request.type for request in prefixed) == ["member.create", "member.create"]
    # "*" is sent everything from its own creation on: its webhook.create first.
    every = await receiver.wait_for("/all", lambda found: len(found) == 4, "every event")
    assert sorted(request.type for request in every) == [
        "member.create",
        "member.create",
        "secret.create",
        "webhook.create",
    ]
    [own] = [request for request in every if request.type == "webhook.create"]
    assert own.verified(everything["secret"])["data"]["resource"]["name"] == everything["id"]
    # The dispatcher has passed every event (the last was delivered): the deliveries made
    # are all there are.
    for hook, expected in [
        (exact, ["secret.create"]),
        (prefix, ["member.create", "member.create"]),
        (everything, ["webhook.create", "member.create", "secret.create", "member.create"]),
    ]:
        listed = await client.get(
            f"{tenant.path}/webhooks/{hook['id']}/deliveries", headers=bearer(tenant.admin_key)
        )
        assert [item["eventType"] for item in listed.json()["items"]] == expected[::-1]
    assert receiver.at("/exact")[0].verified(exact["secret"])["type"] == "secret.create"


async def test_a_new_webhook_is_sent_only_what_follows(
    client: httpx.AsyncClient, factory: Factory, receiver: Receiver
) -> None:
    tenant = await factory.tenant()
    await create_secret(client, tenant, "before")
    hook = await create_webhook(client, tenant, f"{receiver.url}/new", ["secret.*"])
    await create_secret(client, tenant, "after")
    [request] = await receiver.wait_for("/new", of_type("secret.create"), "the later secret")
    assert request.verified(hook["secret"])["data"]["resource"]["name"] == "after"
    items = await wait_for_deliveries(
        client, tenant, hook["id"], lambda items: len(items) == 1, "one delivery"
    )
    assert len(items) == 1


async def test_redeliver_sends_the_same_message_again(
    client: httpx.AsyncClient, factory: Factory, receiver: Receiver
) -> None:
    tenant = await factory.tenant()
    hook = await create_webhook(client, tenant, f"{receiver.url}/again", ["secret.create"])
    await create_secret(client, tenant, "db")
    [first] = await receiver.wait_for("/again", of_type("secret.create"), "the first delivery")
    [delivery] = await wait_for_deliveries(
        client, tenant, hook["id"], lambda items: items[0]["state"] == "succeeded", "succeeded"
    )
    path = f"{tenant.path}/webhooks/{hook['id']}/deliveries/{delivery['id']}/redeliver"
    answer = await client.post(path, headers=bearer(tenant.admin_key))
    assert answer.status_code == 202, answer.text
    made = answer.json()
    assert made["id"] != delivery["id"]
    assert (made["eventId"], made["state"], made["attempts"]) == (first.id, "pending", 0)
    assert answer.headers["location"].endswith(
        f"{tenant.path}/webhooks/{hook['id']}/deliveries/{made['id']}"
    )

    both = await receiver.wait_for("/again", lambda found: len(found) == 2, "the redelivery")
    assert both[1].id == first.id
    assert both[1].body == first.body
    assert both[1].verified(hook["secret"]) == first.verified(hook["secret"])
    followed = await poll(
        client,
        answer.headers["location"].split("/api/v1", 1)[1],
        bearer(tenant.admin_key),
        lambda response: response.json()["state"] == "succeeded",
        "the redelivery succeeded",
    )
    assert followed.json()["attempts"] == 1
    listed = await client.get(
        f"{tenant.path}/webhooks/{hook['id']}/deliveries", headers=bearer(tenant.admin_key)
    )
    assert [item["id"] for item in listed.json()["items"]] == [made["id"], delivery["id"]]


async def test_ping_is_a_signed_message_of_its_own(
    client: httpx.AsyncClient, factory: Factory, receiver: Receiver
) -> None:
    tenant = await factory.tenant()
    hook = await create_webhook(client, tenant, f"{receiver.url}/ping", ["nothing.else"])
    answer = await client.post(
        f"{tenant.path}/webhooks/{hook['id']}/ping", headers=bearer(tenant.admin_key)
    )
    assert answer.status_code == 202, answer.text
    assert answer.json()["eventType"] == "webhook.ping"
    [request] = await receiver.wait_for("/ping", of_type("webhook.ping"), "the ping")
    payload = request.verified(hook["secret"])
    assert payload["data"] == {"webhookId": hook["id"]}
    assert request.id == answer.json()["eventId"]
    await poll(
        client,
        f"{tenant.path}/webhooks/{hook['id']}/deliveries/{answer.json()['id']}",
        bearer(tenant.admin_key),
        lambda response: response.json()["state"] == "succeeded",
        "the ping delivered",
    )


async def test_after_a_rotation_both_secrets_sign_until_the_overlap_ends(
    client: httpx.AsyncClient, factory: Factory, receiver: Receiver, database: Database
) -> None:
    tenant = await factory.tenant()
    hook = await create_webhook(client, tenant, f"{receiver.url}/rotated", ["nothing.else"])
    ping = f"{tenant.path}/webhooks/{hook['id']}/ping"
    rotated = await client.post(
        f"{tenant.path}/webhooks/{hook['id']}/rotate-secret", headers=bearer(tenant.admin_key)
    )
    new = rotated.json()["secret"]
    assert (await client.post(ping, headers=bearer(tenant.admin_key))).status_code == 202
    [request] = await receiver.wait_for("/rotated", lambda found: len(found) == 1, "a ping")
    signatures = request.headers["webhook-signature"].split(" ")
    assert len(signatures) == 2
    assert all(part.startswith("v1,") for part in signatures)
    # Either secret verifies: a receiver may change over whenever it likes within 24 h.
    assert request.verified(new) == request.verified(hook["secret"])

    # Once the overlap is over, only the new secret signs.
    async with database.transaction() as session:
        await session.execute(
            update(Webhook)
            .where(Webhook.id == hook["id"])
            .values(previous_secret_expires_at=utcnow() - timedelta(seconds=1))
        )
    assert (await client.post(ping, headers=bearer(tenant.admin_key))).status_code == 202
    later = (await receiver.wait_for("/rotated", lambda found: len(found) == 2, "a ping"))[1]
    assert " " not in later.headers["webhook-signature"]
    later.verified(new)
    with pytest.raises(WebhookVerificationError):
        later.verified(hook["secret"])
    read = await client.get(
        f"{tenant.path}/webhooks/{hook['id']}", headers=bearer(tenant.admin_key)
    )
    assert at(read.json()["previousSecretExpiresAt"]) < at(later.message["timestamp"])


async def test_a_cluster_provisioned_is_told_as_it_happens(
    client: httpx.AsyncClient, factory: Factory, receiver: Receiver
) -> None:
    """The issue's acceptance: a cluster created and provisioned (the simulator) delivers
    cluster.create, then cluster.phase_changed to Provisioning and to Running."""
    tenant = await factory.tenant()
    hook = await create_webhook(client, tenant, f"{receiver.url}/clusters", ["cluster.*"])
    await create_cluster(client, tenant.path, tenant.admin_key, "web")
    await wait_running(client, tenant.path, tenant.admin_key, "web")

    wanted = [
        ("cluster.create", None),
        ("cluster.phase_changed", "Provisioning"),
        ("cluster.phase_changed", "Running"),
    ]

    def told(request: Received) -> tuple[str, str | None]:
        return request.type, request.message["data"]["data"].get("to")

    def all_told(found: list[Received]) -> bool:
        return all(want in {told(request) for request in found} for want in wanted)

    requests = await receiver.wait_for("/clusters", all_told, "the cluster's events")
    # Sent concurrently, they may arrive in any order: in the stream's, as the list has it.
    listed = await client.get(
        f"{tenant.path}/events",
        params={"kind": "cluster", "name": "web"},
        headers=bearer(tenant.admin_key),
    )
    order = [event["id"] for event in reversed(listed.json()["items"])]
    messages = sorted(
        (request.verified(hook["secret"]) for request in requests),
        key=lambda message: order.index(message["data"]["id"]),
    )
    assert [(m["type"], m["data"]["data"].get("to")) for m in messages][:3] == wanted
    assert {message["data"]["resource"]["name"] for message in messages} == {"web"}
