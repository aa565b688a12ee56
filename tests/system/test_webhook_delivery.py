"""A worker SIGKILLed in the middle of a webhook delivery loses no delivery.

A deployment on PostgreSQL (one API, two workers) delivers a tenant's events to a receiver
on loopback. The receiver holds one delivery's request open; the worker that sent it (the
holder of that delivery's lease) is SIGKILLed while it waits for the answer. The other worker
takes the delivery over once the lease lapses and sends it again with the same
``webhook-id``: every event arrives, signed, and only the one interrupted delivery arrives
twice.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from standardwebhooks import Webhook

from tenantplane.event.webhook.models import WebhookDelivery
from tests.factories import TenantFixture
from tests.fakes.server import Hold, QuietHandler, serving
from tests.http_client import bearer
from tests.system.conftest import Connections, Figures
from tests.system.harness import Fleet, client_of, deployment_env, eventually, owner_of

pytestmark = pytest.mark.system

SECRETS = 12
# The lease of a delivery (60 s) lapses before another worker takes it over.
TAKEOVER_SECONDS = 150.0


@dataclass
class Receiver:
    url: str = ""
    hold: Hold = field(default_factory=lambda: Hold("POST", "/hook", timeout=120.0))
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ids(self) -> list[str]:
        with self.lock:
            return [headers["webhook-id"] for headers, _ in self.received]


@contextmanager
def receiving() -> Iterator[Receiver]:
    """A receiver that answers 200, but holds the fifth request until released."""
    receiver = Receiver()

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {name.lower(): value for name, value in self.headers.items()}
            with receiver.lock:
                receiver.received.append((headers, body))
                held = len(receiver.received) == 5
            if held:
                receiver.hold.wait()
            try:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
            except OSError:
                pass  # the worker that asked is gone
            if held:
                receiver.hold.answered.set()

    with serving(Handler) as server:
        receiver.url = server.url
        yield receiver


async def _subscribe(client: httpx.AsyncClient, tenant: TenantFixture, url: str) -> str:
    created = await client.post(
        f"/api/v1{tenant.path}/webhooks",
        json={"url": f"{url}/hook", "events": ["secret.*"]},
        headers=bearer(tenant.admin_key),
    )
    assert created.status_code == 201, created.text
    secret: str = created.json()["secret"]
    return secret


async def _event_ids(client: httpx.AsyncClient, tenant: TenantFixture) -> set[str]:
    listed = await client.get(
        f"/api/v1{tenant.path}/events",
        params={"action": "secret.*", "limit": 1000},
        headers=bearer(tenant.readonly_key),
    )
    assert listed.status_code == 200, listed.text
    return {event["id"] for event in listed.json()["items"]}


async def test_a_worker_killed_mid_delivery_loses_no_delivery(
    tmp_path: Path,
    postgres_url: str,
    fleet: Fleet,
    connections: Connections,
    figures: Figures,
) -> None:
    env = deployment_env(
        tmp_path,
        postgres_url,
        # The receiver listens on loopback: the operator allows private destinations.
        alerting_firewall_block_private="false",
        webhook_retry_base_seconds="1",
    )
    deployment = fleet.deploy(env, apis=1, workers=2)
    database, factory = connections.open(postgres_url)
    tenant = await factory.tenant(name="acme")
    with receiving() as receiver:
        async with client_of(deployment.apis[0], 60.0) as client:
            secret = await _subscribe(client, tenant, receiver.url)
            for index in range(SECRETS):
                created = await client.post(
                    f"/api/v1{tenant.path}/secrets",
                    json={"name": f"s{index}", "secretPath": f"apps/s{index}"},
                    headers=bearer(tenant.admin_key),
                )
                assert created.status_code == 201, created.text
            expected = await _event_ids(client, tenant)
        assert len(expected) == SECRETS

        await eventually(lambda: _true(receiver.hold.reached.is_set()), "the held delivery", 60.0)
        held_id = receiver.ids()[4]
        async with database.transaction() as session:
            owner = (
                await session.execute(
                    select(WebhookDelivery.lock_owner).where(WebhookDelivery.message_id == held_id)
                )
            ).scalar_one()
        [sender] = [node for node in deployment.workers if owner and owner_of(node) in owner]
        sender.kill()
        # What the killed worker held when it died: besides the held delivery, it may have
        # sent another whose answer it had not recorded yet (its leases are kept until they
        # expire, so they are all still there).
        async with database.transaction() as session:
            held_by_the_dead = set(
                (
                    await session.execute(
                        select(WebhookDelivery.message_id).where(
                            WebhookDelivery.lock_owner.contains(owner_of(sender))
                        )
                    )
                ).scalars()
            )
        assert held_id in held_by_the_dead
        receiver.hold.release()

        async def all_delivered() -> bool:
            return set(receiver.ids()) >= expected and receiver.ids().count(held_id) >= 2

        await eventually(
            all_delivered, "every delivery, the interrupted one again", TAKEOVER_SECONDS
        )

    counts = Counter(receiver.ids())
    figures["deliveries"] = sum(counts.values())
    figures["distinct messages"] = len(counts)
    assert set(counts) == expected
    # At least once: only what the killed worker held can come twice, the held one does.
    repeated = {message for message, count in counts.items() if count > 1}
    assert held_id in repeated
    assert repeated <= held_by_the_dead, (repeated, held_by_the_dead)
    for headers, body in receiver.received:
        payload: dict[str, Any] = Webhook(secret).verify(body, headers)
        assert payload == json.loads(body)
        assert payload["data"]["id"] == headers["webhook-id"]


async def _true(value: bool) -> bool:
    return value
