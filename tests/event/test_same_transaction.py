"""An event and its change commit together or not at all."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tenantplane.event.log import append
from tests.event.stream import audit_events
from tests.factories import Factory
from tests.http_client import bearer


async def test_a_change_whose_event_cannot_be_written_is_not_kept(
    client: httpx.AsyncClient, factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = await factory.tenant()

    async def failing(*args: Any, **kwargs: Any) -> dict[str, Any]:
        # The event's statements run, then the transaction fails before its commit.
        await append(*args, **kwargs)
        raise RuntimeError("the disk filled up")

    monkeypatch.setattr("tenantplane.event.audit.append", failing)
    body = {"name": "db", "secretPath": "apps/db"}
    failed = await client.post(
        f"{tenant.path}/secrets", json=body, headers=bearer(tenant.admin_key)
    )
    assert failed.status_code == 500
    monkeypatch.undo()

    assert await audit_events(client, tenant) == []
    missing = await client.get(f"{tenant.path}/secrets/db", headers=bearer(tenant.admin_key))
    assert missing.status_code == 404
    created = await client.post(
        f"{tenant.path}/secrets", json=body, headers=bearer(tenant.admin_key)
    )
    assert created.status_code == 201
    [event] = await audit_events(client, tenant)
    assert event["action"] == "secret.create"
