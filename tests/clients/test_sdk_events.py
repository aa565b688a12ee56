"""The SDK's events (filters, pages, follow) and webhooks against a real server process; the
webhooks' messages received by a real loopback receiver and verified by the Standard
Webhooks specification's own library."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime
from typing import TypeVar

import pytest

from tenantplane_client import ApiError, AsyncTenantplane, Tenantplane, models
from tests.clients.conftest import Tenant
from tests.clients.proxy import Fault, Proxy
from tests.clients.test_sdk import FAST
from tests.event.webhook.receiver import Receiver, running_receiver

T = TypeVar("T")
DEADLINE_SECONDS = 60.0


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as running:
        yield running


async def eventually(read: Callable[[], Awaitable[T]], until: Callable[[T], bool], what: str) -> T:
    """``read()`` once ``until`` holds for it (polled; the deadline only turns a hang into a
    failure)."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + DEADLINE_SECONDS
    while True:
        value = await read()
        if until(value):
            return value
        if loop.time() > give_up:
            pytest.fail(f"gave up waiting for {what}: {value!r}")
        await asyncio.sleep(0.05)


def test_events_filter_and_walk_their_pages(tenant: Tenant) -> None:
    email = "dev@example.com"
    with Tenantplane(tenant.url, tenant.name, tenant.key, retry=FAST, page_size=2) as api:
        api.members.add(email, "readonly")
        api.secrets.create({"name": "db", "secretPath": "apps/db"})
        api.members.update(email, "admin")
        api.members.remove(email)
        requests: list[str] = []
        api.http.event_hooks["request"].append(lambda request: requests.append(str(request.url)))

        members = api.events.list(kind="member")
        assert [e.action for e in members] == ["member.delete", "member.update", "member.create"]
        assert len(requests) == 2  # 3 events, 2 a page
        assert all("kind=member" in url and "limit=2" in url for url in requests)
        assert {(e.type, e.resource.name) for e in members} == {("audit", email)}
        assert [e.status for e in members] == [204, 200, 201]
        assert all(e.hash and e.id for e in members)

        assert [e.action for e in api.events.list(action="member.update")] == ["member.update"]
        assert [e.action for e in api.events.list(action="member.*", limit=1)] == ["member.delete"]
        assert requests[-1].endswith("limit=1")
        assert [e.resource.name for e in api.events.list(kind="secret")] == ["db"]
        assert all(e.type == "platform" for e in api.events.list(type="platform"))
        assert api.events.list(type="audit", name="nobody") == []
        key_id = members[0].actor.id
        assert members[0].actor.kind == "apikey"
        assert key_id is not None
        assert len(api.events.list(actor=key_id, kind="member")) == 3
        assert api.events.list(actor="nobody@example.com") == []

        update = members[1]
        at = datetime.fromisoformat(update.time)
        since = [e.action for e in api.events.list(kind="member", since=at)]
        assert "member.update" in since
        assert "member.create" not in since
        until = [e.action for e in api.events.list(kind="member", until=update.time)]
        assert "member.update" in until
        assert "member.delete" not in until
        assert [e.id for e in api.events.iter(kind="member")] == [e.id for e in members]

        with pytest.raises(ApiError) as invalid:
            api.events.list(since="yesterday")
        assert (invalid.value.status, invalid.value.field) == (400, "since")
        sent = len(requests)
        with pytest.raises(ValueError, match="no time zone"):
            api.events.list(since=at.replace(tzinfo=None))
        with pytest.raises(ValueError, match="limit"):
            api.events.list(limit=0)
        assert len(requests) == sent  # refused before asking


async def test_follow_yields_what_arrives_after_it_started_oldest_first(tenant: Tenant) -> None:
    async with AsyncTenantplane(tenant.url, tenant.name, tenant.key, retry=FAST) as api:
        await api.members.add("before@example.com", "readonly")
        ready = asyncio.Event()
        received: list[models.EventRead] = []

        async def consume() -> None:
            followed = api.events.follow(
                kind="member", interval=0.02, max_interval=0.1, on_ready=ready.set
            )
            async for event in followed:
                received.append(event)
                if len(received) == 3:
                    return

        consumer = asyncio.create_task(consume())
        await asyncio.wait_for(ready.wait(), DEADLINE_SECONDS)
        emails = ["one@example.com", "two@example.com", "three@example.com"]
        for email in emails:
            await api.members.add(email, "readonly")
            await api.secrets.create({"name": email.split("@")[0], "secretPath": "apps/x"})
        await asyncio.wait_for(consumer, DEADLINE_SECONDS)
    assert [(e.action, e.resource.name) for e in received] == [
        ("member.create", email) for email in emails
    ]


def test_follow_from_since_walks_every_page_then_what_comes(tenant: Tenant) -> None:
    names = [f"s{index}" for index in range(5)]
    with Tenantplane(tenant.url, tenant.name, tenant.key, retry=FAST, page_size=2) as api:
        for name in names:
            api.secrets.create({"name": name, "secretPath": f"apps/{name}"})
        oldest = api.events.list(kind="secret")[-1]
        followed = api.events.follow(
            kind="secret", since=oldest.time, interval=0.01, max_interval=0.05
        )
        assert [next(followed).resource.name for _ in names] == names
        api.secrets.create({"name": "late", "secretPath": "apps/late"})
        assert next(followed).resource.name == "late"


def test_follow_starts_after_the_newest_event_once_ready(tenant: Tenant) -> None:
    with Tenantplane(tenant.url, tenant.name, tenant.key, retry=FAST) as api:
        api.secrets.create({"name": "old", "secretPath": "apps/old"})

        def write_one() -> None:
            # Called once the start is fixed: "old" is behind it, "new" after it.
            api.secrets.create({"name": "new", "secretPath": "apps/new"})

        followed = api.events.follow(
            action="secret.*", interval=0.01, max_interval=0.05, on_ready=write_one
        )
        first = next(followed)
    assert (first.action, first.resource.name) == ("secret.create", "new")


async def test_webhooks_deliver_signed_messages_to_a_receiver(
    webhook_tenant: Tenant, receiver: Receiver
) -> None:
    tenant = webhook_tenant
    async with AsyncTenantplane(tenant.url, tenant.name, tenant.key, retry=FAST) as api:
        created = await api.webhooks.create(
            {"url": f"{receiver.url}/hook", "events": ["secret.*"], "description": "ops"}
        )
        assert created.secret.startswith("whsec_")
        assert (created.events, created.enabled, created.description) == (["secret.*"], True, "ops")
        read = await api.webhooks.get(created.id)
        assert "secret" not in read.model_dump()
        assert read.id == created.id
        assert [webhook.id for webhook in await api.webhooks.list()] == [created.id]

        # An event it subscribes to, signed with the secret shown at creation.
        await api.secrets.create({"name": "db", "secretPath": "apps/db"})
        [message] = await receiver.wait_for("/hook", lambda found: bool(found), "secret.create")
        payload = message.verified(created.secret)
        assert payload["type"] == "secret.create"
        assert payload["data"]["resource"] == {"kind": "secret", "name": "db"}

        ping = await api.webhooks.ping(created.id)
        assert (ping.event_type, ping.state) == ("webhook.ping", "pending")
        delivered = await eventually(
            lambda: api.webhooks.get_delivery(created.id, ping.id),
            lambda delivery: delivery.state == "succeeded",
            "the ping's delivery",
        )
        assert [attempt.status_code for attempt in delivered.history] == [200]
        deliveries = await api.webhooks.list_deliveries(created.id)
        assert [d.event_type for d in deliveries] == ["webhook.ping", "secret.create"]
        assert [d.id for d in await api.webhooks.list_deliveries(created.id, limit=1)] == [ping.id]

        again = await api.webhooks.redeliver(created.id, ping.id)
        assert again.id != ping.id
        assert again.event_id == ping.event_id
        pings = await receiver.wait_for(
            "/hook",
            lambda found: sum(r.type == "webhook.ping" for r in found) == 2,
            "the redelivered ping",
        )
        first, second = (r for r in pings if r.type == "webhook.ping")
        assert first.id == second.id == ping.event_id
        assert second.verified(created.secret)["type"] == "webhook.ping"

        disabled = await api.webhooks.update(created.id, models.WebhookUpdate(enabled=False))
        assert disabled.enabled is False
        with pytest.raises(ApiError) as refused:
            await api.webhooks.ping(created.id)
        assert (refused.value.status, refused.value.code) == (409, "WEBHOOK_DISABLED")

        rotated = await api.webhooks.rotate_secret(created.id)
        assert rotated.secret.startswith("whsec_")
        assert rotated.secret != created.secret
        assert rotated.previous_secret_expires_at is not None

        # Audited, never with the secrets.
        audited = await api.events.list(kind="webhook")
        assert {"webhook.create", "webhook.update", "webhook.secret.rotate"} <= {
            e.action for e in audited
        }
        stored = json.dumps([e.model_dump(mode="json") for e in audited])
        assert created.secret not in stored
        assert rotated.secret not in stored

        await api.webhooks.delete(created.id)
        with pytest.raises(ApiError) as gone:
            await api.webhooks.get(created.id)
        assert gone.value.status == 404


def test_a_rotation_or_ping_whose_answer_was_lost_is_replayed(
    tenant: Tenant, proxy: tuple[Proxy, str]
) -> None:
    """Rotate-secret and ping are retried under their Idempotency-Key, as every POST is: the
    server answers the repeat with the first answer, so the secret the caller learns is the
    one that signs, the webhook rotated once, and one ping was sent."""
    fake, url = proxy
    with Tenantplane(url, tenant.name, tenant.key, retry=FAST) as api:
        hook = api.webhooks.create(
            {"url": "https://hooks.example.invalid/x", "events": ["invoice.past_due"]}
        )
        fake.inject(Fault(drop_after_forward=True, method="POST"))
        rotated = api.webhooks.rotate_secret(hook.id)
        assert rotated.secret.startswith("whsec_")
        assert api.webhooks.get(hook.id).resource_version == "2"  # rotated once
        fake.inject(Fault(drop_after_forward=True, method="POST"))
        assert api.webhooks.ping(hook.id).event_type == "webhook.ping"
        assert len(api.webhooks.list_deliveries(hook.id)) == 1
    rotations = [seen for seen in fake.seen if seen.path.endswith("/rotate-secret")]
    assert [seen.status for seen in rotations] == [None, 200]
    assert rotations[0].headers["Idempotency-Key"] == rotations[1].headers["Idempotency-Key"]
    pings = [seen for seen in fake.seen if seen.path.endswith("/ping")]
    assert [seen.status for seen in pings] == [None, 202]
