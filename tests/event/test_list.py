"""GET /events: newest first, always paged, filtered; bad parameters are 400 naming them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests.event.stream import events, key_id
from tests.factories import Factory, TenantFixture
from tests.http_client import bearer


async def _write_some(client: httpx.AsyncClient, tenant: TenantFixture, count: int) -> None:
    for index in range(count):
        body = {"name": f"s{index}", "secretPath": f"apps/s{index}"}
        created = await client.post(
            f"{tenant.path}/secrets", json=body, headers=bearer(tenant.admin_key)
        )
        assert created.status_code == 201, created.text
    refused = await client.delete(f"{tenant.path}/secrets/s0", headers=bearer(tenant.readonly_key))
    assert refused.status_code == 403
    for name in ("web", "api"):
        created = await client.post(
            f"{tenant.path}/clusters", json={"name": name}, headers=bearer(tenant.admin_key)
        )
        assert created.status_code == 201, created.text


async def test_pages_walk_every_event_once_newest_first(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await _write_some(client, tenant, 12)
    everything = await events(client, tenant, type="audit")
    assert len(everything) == 15
    walked: list[str] = []
    params: dict[str, str | int] = {"type": "audit", "limit": 4}
    pages = 0
    while True:
        page = await client.get(
            f"{tenant.path}/events", params=params, headers=bearer(tenant.readonly_key)
        )
        assert page.status_code == 200, page.text
        body = page.json()
        assert len(body["items"]) <= 4
        walked += [item["id"] for item in body["items"]]
        pages += 1
        if "continue" not in body:
            break
        params["continue"] = body["continue"]
    assert walked == [event["id"] for event in everything]
    assert pages == 4
    times = [event["time"] for event in everything]
    assert times == sorted(times, reverse=True)
    assert [event["id"] for event in everything] == sorted(walked, reverse=True)


async def test_the_default_page_is_a_hundred(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    for index in range(101):
        refused = await client.delete(
            f"{tenant.path}/secrets/s{index}", headers=bearer(tenant.readonly_key)
        )
        assert refused.status_code == 403
    page = (await client.get(f"{tenant.path}/events", headers=bearer(tenant.readonly_key))).json()
    assert len(page["items"]) == 100
    assert "continue" in page


async def test_filters(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    start = datetime.now(UTC) - timedelta(seconds=5)
    await _write_some(client, tenant, 3)
    admin, reader = await key_id(client, tenant, "admin"), await key_id(client, tenant, "readonly")

    def actions(found: list[dict[str, object]]) -> list[object]:
        return [event["action"] for event in found]

    assert actions(await events(client, tenant, action="cluster.create")) == ["cluster.create"] * 2
    prefixed = await events(client, tenant, type="audit", action="secret.*")
    assert actions(prefixed) == ["secret.delete"] + ["secret.create"] * 3
    assert len(await events(client, tenant, type="audit", action="*")) == 6
    named = await events(client, tenant, kind="secret", name="s0")
    assert actions(named) == ["secret.delete", "secret.create"]
    assert actions(await events(client, tenant, actor=reader)) == ["secret.delete"]
    assert len(await events(client, tenant, actor=admin, type="audit")) == 5
    assert await events(client, tenant, actor="nobody@example.com") == []
    assert len(await events(client, tenant, type="audit", since=start.isoformat())) == 6
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    assert await events(client, tenant, since=later) == []
    assert await events(client, tenant, until=start.isoformat()) == []


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"type": "everything"}, "type"),
        ({"action": "Cluster.Create"}, "action"),
        ({"action": "cluster.*.x"}, "action"),
        ({"since": "yesterday"}, "since"),
        ({"until": "2026-12-01"}, "until"),
        ({"until": "2026-12-01T10:00:00"}, "until"),
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
        ({"continue": "not-a-token"}, "continue"),
        ({"kind": ""}, "kind"),
    ],
)
async def test_bad_parameters_are_400_naming_them(
    client: httpx.AsyncClient, factory: Factory, params: dict[str, str | int], field: str
) -> None:
    tenant = await factory.tenant()
    response = await client.get(
        f"{tenant.path}/events", params=params, headers=bearer(tenant.readonly_key)
    )
    assert response.status_code == 400, response.text
    assert response.json()["field"] == field


async def test_a_token_of_another_tenant_is_refused(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant, other = await factory.tenant(), await factory.tenant()
    for owner in (tenant, other):
        for index in range(2):
            await client.delete(
                f"{owner.path}/secrets/s{index}", headers=bearer(owner.readonly_key)
            )
    page = await client.get(
        f"{tenant.path}/events", params={"limit": 1}, headers=bearer(tenant.readonly_key)
    )
    token = page.json()["continue"]
    foreign = await client.get(
        f"{other.path}/events", params={"continue": token}, headers=bearer(other.readonly_key)
    )
    assert foreign.status_code == 400
    assert foreign.json()["field"] == "continue"


async def test_members_read_and_nobody_else(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant, other = await factory.tenant(), await factory.tenant()
    path = f"{tenant.path}/events"
    assert (await client.get(path, headers=bearer(tenant.readonly_key))).status_code == 200
    assert (await client.get(path, headers=bearer(tenant.admin_key))).status_code == 200
    assert (await client.get(path, headers=bearer(other.admin_key))).status_code == 403
    assert (await client.get(path)).status_code == 401
