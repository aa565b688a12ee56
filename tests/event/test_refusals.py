"""Writes refused for access (403) are recorded in the tenant's stream; nothing else is."""

from __future__ import annotations

import httpx

from tests.event.stream import audit_events, key_id
from tests.factories import Factory
from tests.http_client import bearer
from tests.oidc_provider import MockProvider


async def test_a_readonly_write_is_refused_and_recorded(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    refused = await client.post(
        f"{tenant.path}/secrets",
        json={"name": "db", "secretPath": "apps/db"},
        headers=bearer(tenant.readonly_key),
    )
    assert refused.status_code == 403
    [event] = await audit_events(client, tenant)
    assert event["action"] == "secret.create"
    assert event["status"] == 403
    assert event["resource"] == {"kind": "secret", "name": "db"}
    assert event["actor"] == {"kind": "apikey", "id": await key_id(client, tenant, "readonly")}
    assert event["requestId"] == refused.headers["X-Request-Id"]
    listed = await client.get(f"{tenant.path}/secrets", headers=bearer(tenant.admin_key))
    assert listed.json()["items"] == []


async def test_another_tenants_key_is_recorded_in_the_tenant_it_tried(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant, other = await factory.tenant(), await factory.tenant()
    refused = await client.delete(f"{tenant.path}/clusters/web", headers=bearer(other.admin_key))
    assert refused.status_code == 403
    [event] = await audit_events(client, tenant)
    assert (event["action"], event["status"]) == ("cluster.delete", 403)
    assert event["resource"] == {"kind": "cluster", "name": "web"}
    assert event["actor"] == {"kind": "apikey", "id": await key_id(client, other, "admin")}
    assert await audit_events(client, other) == []


async def test_members_are_named_by_email(
    oidc_client: httpx.AsyncClient, factory: Factory, oidc_provider: MockProvider
) -> None:
    tenant = await factory.tenant()
    await factory.member(tenant.id, "Reader@Example.com")
    token = oidc_provider.id_token("reader@example.com")
    refused = await oidc_client.put(
        f"{tenant.path}/alerting/global", json={}, headers=bearer(token)
    )
    assert refused.status_code == 403
    allowed = await oidc_client.post(
        f"{tenant.path}/secrets",
        json={"name": "db", "secretPath": "apps/db"},
        headers=bearer(oidc_provider.id_token(tenant.admin_email)),
    )
    assert allowed.status_code == 201, allowed.text
    created, refusal = await audit_events(oidc_client, tenant)
    assert refusal["actor"] == {"kind": "member", "email": "reader@example.com"}
    assert (refusal["action"], refusal["status"]) == ("alerting.global.put", 403)
    assert created["actor"] == {"kind": "member", "email": tenant.admin_email}
    assert (created["action"], created["status"]) == ("secret.create", 201)


async def test_unauthenticated_and_invalid_writes_record_nothing(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    path = f"{tenant.path}/secrets"
    assert (await client.post(path, json={"name": "db"})).status_code == 401
    invalid = await client.post(path, json={"name": "db"}, headers=bearer(tenant.admin_key))
    assert invalid.status_code == 400
    taken = {"name": "db", "secretPath": "apps/db"}
    assert (
        await client.post(path, json=taken, headers=bearer(tenant.admin_key))
    ).status_code == 201
    assert (
        await client.post(path, json=taken, headers=bearer(tenant.admin_key))
    ).status_code == 409
    [created] = await audit_events(client, tenant)
    assert created["status"] == 201


async def test_a_refusal_for_a_tenant_that_does_not_exist_records_nothing(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    refused = await client.post(
        "/tenants/no-such-tenant/secrets",
        json={"name": "db", "secretPath": "apps/db"},
        headers=bearer(tenant.admin_key),
    )
    assert refused.status_code == 403
    assert await audit_events(client, tenant) == []


async def test_a_repeat_answered_from_its_idempotency_key_records_nothing(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    headers = {**bearer(tenant.admin_key), "Idempotency-Key": "create-db-once"}
    body = {"name": "db", "secretPath": "apps/db"}
    first = await client.post(f"{tenant.path}/secrets", json=body, headers=headers)
    repeat = await client.post(f"{tenant.path}/secrets", json=body, headers=headers)
    assert (first.status_code, repeat.status_code) == (201, 201)
    assert repeat.headers["Idempotent-Replayed"] == "true"
    [created] = await audit_events(client, tenant)
    assert created["requestId"] == first.headers["X-Request-Id"]
