"""The API with its reconcilers, allowed to send webhooks to loopback (the receivers of
these tests), retrying after 50 ms instead of 10 s; and a real receiver."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tenantplane.config import Settings
from tenantplane.db.engine import Database
from tests.cluster.polling import poll
from tests.conftest import make_settings
from tests.event.webhook.receiver import Received, Receiver, running_receiver
from tests.factories import TenantFixture
from tests.http_client import bearer

# Loopback receivers are private destinations: these tests allow them.
LOOPBACK_ALLOWED: dict[str, Any] = {
    "alerting_firewall_block_private": False,
    "webhook_retry_base_seconds": 0.05,
    "reconcile_idle_poll_seconds": 0.1,
}


@pytest.fixture
def settings(database: Database, database_url: str, tmp_path: Path) -> Settings:
    return make_settings(database_url, tmp_path, **LOOPBACK_ALLOWED)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as running:
        yield running


async def create_webhook(
    client: httpx.AsyncClient,
    tenant: TenantFixture,
    url: str,
    events: list[str],
    **fields: Any,
) -> dict[str, Any]:
    response = await client.post(
        f"{tenant.path}/webhooks",
        json={"url": url, "events": events, **fields},
        headers=bearer(tenant.admin_key),
    )
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def wait_for_deliveries(
    client: httpx.AsyncClient,
    tenant: TenantFixture,
    webhook_id: str,
    until: Callable[[list[dict[str, Any]]], bool],
    what: str,
) -> list[dict[str, Any]]:
    """The webhook's deliveries (newest first) once ``until`` holds for them."""

    def check(response: httpx.Response) -> bool:
        return response.status_code == 200 and until(response.json()["items"])

    response = await poll(
        client,
        f"{tenant.path}/webhooks/{webhook_id}/deliveries",
        bearer(tenant.admin_key),
        check,
        what,
    )
    items: list[dict[str, Any]] = response.json()["items"]
    return items


async def create_secret(client: httpx.AsyncClient, tenant: TenantFixture, name: str) -> None:
    response = await client.post(
        f"{tenant.path}/secrets",
        json={"name": name, "secretPath": f"apps/{name}"},
        headers=bearer(tenant.admin_key),
    )
    assert response.status_code == 201, response.text


async def add_member(client: httpx.AsyncClient, tenant: TenantFixture, email: str) -> None:
    response = await client.post(
        f"{tenant.path}/members",
        json={"email": email, "role": "readonly"},
        headers=bearer(tenant.admin_key),
    )
    assert response.status_code == 201, response.text


def of_type(*types: str) -> Callable[[list[Received]], bool]:
    """The requests' message types are exactly ``types``, in order."""

    def check(requests: list[Received]) -> bool:
        return [request.type for request in requests] == list(types)

    return check


def at(timestamp: str) -> datetime:
    """An RFC 3339 timestamp of an answer, to compare (as text, "05Z" sorts after "05.1Z")."""
    return datetime.fromisoformat(timestamp)
