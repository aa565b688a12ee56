"""Idempotency-Key on the creating POSTs: replay, reuse, syntax, concurrency, expiry."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import func, select, text, update

from tenantplane.db.base import utcnow
from tenantplane.db.engine import Database
from tenantplane.idempotency.models import IdempotencyRecord
from tenantplane.idempotency.repository import advisory_lock_id
from tenantplane.member.models import Role
from tests.factories import Factory, TenantFixture
from tests.http_client import bearer


def keyed(tenant: TenantFixture, key: str) -> dict[str, str]:
    return {**bearer(tenant.admin_key), "Idempotency-Key": key}


async def member_emails(client: httpx.AsyncClient, tenant: TenantFixture) -> list[str]:
    listed = await client.get(f"{tenant.path}/members", headers=bearer(tenant.admin_key))
    return sorted(item["email"] for item in listed.json()["items"])


async def cluster_names(client: httpx.AsyncClient, tenant: TenantFixture) -> list[str]:
    listed = await client.get(f"{tenant.path}/clusters", headers=bearer(tenant.admin_key))
    return [item["name"] for item in listed.json()["items"]]


async def test_a_repeat_replays_the_first_response_and_creates_nothing(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    body = {"name": "web", "resources": {"cpu": "1", "memory": "1Gi", "storage": "1Gi"}}
    first = await client.post(f"{tenant.path}/clusters", json=body, headers=keyed(tenant, "k-1"))
    assert first.status_code == 201
    assert "Idempotent-Replayed" not in first.headers
    # The same body, spelt differently (key order, spacing), is the same request.
    respelt = b'{ "resources": {"storage":"1Gi","memory":"1Gi","cpu":"1"}, "name": "web" }'
    again = await client.post(
        f"{tenant.path}/clusters",
        content=respelt,
        headers={**keyed(tenant, '"k-1"'), "Content-Type": "application/json"},
    )
    assert again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.content == first.content
    assert again.headers["ETag"] == first.headers["ETag"]
    assert again.headers["Location"] == first.headers["Location"]
    assert "X-Request-Id" in again.headers
    assert await cluster_names(client, tenant) == ["web"]


async def test_the_same_key_with_another_body_is_refused(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    path = f"{tenant.path}/members"
    created = await client.post(
        path, json={"email": "a@example.com", "role": "readonly"}, headers=keyed(tenant, "m")
    )
    assert created.status_code == 201
    reused = await client.post(
        path, json={"email": "b@example.com", "role": "readonly"}, headers=keyed(tenant, "m")
    )
    assert reused.status_code == 422
    assert reused.json()["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert reused.json()["field"] == "Idempotency-Key"
    # Another path is another request too.
    elsewhere = await client.post(
        f"{tenant.path}/apikeys",
        json={"email": "a@example.com", "role": "readonly"},
        headers=keyed(tenant, "m"),
    )
    assert elsewhere.status_code == 422
    assert await member_emails(client, tenant) == ["a@example.com", tenant.admin_email]


@pytest.mark.parametrize(
    "header",
    ["", '""', "a b", '"unterminated', "naïve", "x" * 256, '"a"b"', '"bad \\n escape"'],
)
async def test_a_malformed_key_is_refused_and_nothing_is_created(
    client: httpx.AsyncClient, factory: Factory, header: str
) -> None:
    tenant = await factory.tenant()
    refused = await client.post(
        f"{tenant.path}/members",
        json={"email": "a@example.com", "role": "readonly"},
        # Bytes: httpx would refuse to encode a non-ASCII header value itself.
        headers=[
            (b"Authorization", f"Bearer {tenant.admin_key}".encode()),
            (b"Idempotency-Key", header.encode()),
        ],
    )
    assert refused.status_code == 400
    assert refused.json()["code"] == "INVALID_IDEMPOTENCY_KEY"
    assert refused.json()["field"] == "Idempotency-Key"
    assert await member_emails(client, tenant) == [tenant.admin_email]


async def test_the_longest_key_and_escapes_are_accepted(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    for number, key in enumerate(["x" * 255, '"with space and \\"quote\\""']):
        created = await client.post(
            f"{tenant.path}/members",
            json={"email": f"m{number}@example.com", "role": "readonly"},
            headers=keyed(tenant, key),
        )
        assert created.status_code == 201, created.text


async def test_an_api_key_replay_returns_the_same_raw_key(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    body = {"displayName": "ci", "role": "readonly"}
    first = await client.post(f"{tenant.path}/apikeys", json=body, headers=keyed(tenant, "ak"))
    again = await client.post(f"{tenant.path}/apikeys", json=body, headers=keyed(tenant, "ak"))
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers["Cache-Control"] == "no-store"
    raw = again.json()["key"]
    assert (await client.get(tenant.path, headers=bearer(raw))).status_code == 200
    listed = await client.get(f"{tenant.path}/apikeys", headers=bearer(tenant.admin_key))
    assert [item["displayName"] for item in listed.json()["items"]].count("ci") == 1


async def test_a_completed_client_error_is_replayed(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    path = f"{tenant.path}/members"
    body = {"email": "taken@example.com", "role": "readonly"}
    await factory.member(tenant.id, "taken@example.com")
    conflict = await client.post(path, json=body, headers=keyed(tenant, "dup"))
    assert conflict.status_code == 409
    assert conflict.json()["code"] == "ALREADY_EXISTS"
    removed = await client.delete(f"{path}/taken@example.com", headers=bearer(tenant.admin_key))
    assert removed.status_code == 204
    # The request completed with 409: its key keeps that answer even though it would now pass.
    again = await client.post(path, json=body, headers=keyed(tenant, "dup"))
    assert again.status_code == 409
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == conflict.json()
    assert await member_emails(client, tenant) == [tenant.admin_email]
    # A body that fails validation is a completed request as well.
    invalid = {"email": "not-an-email", "role": "readonly"}
    bad = await client.post(path, json=invalid, headers=keyed(tenant, "bad"))
    bad_again = await client.post(path, json=invalid, headers=keyed(tenant, "bad"))
    assert bad.status_code == bad_again.status_code == 400
    assert bad_again.headers["Idempotent-Replayed"] == "true"


async def test_keys_belong_to_their_tenant(client: httpx.AsyncClient, factory: Factory) -> None:
    one, two = await factory.tenant(), await factory.tenant()
    body = {"email": "same@example.com", "role": "readonly"}
    for tenant in (one, two):
        created = await client.post(
            f"{tenant.path}/members", json=body, headers=keyed(tenant, "shared")
        )
        assert created.status_code == 201
        assert "Idempotent-Replayed" not in created.headers


async def test_expired_records_are_purged_and_the_key_is_free_again(
    client: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    path = f"{tenant.path}/members"
    body = {"email": "late@example.com", "role": "readonly"}
    assert (await client.post(path, json=body, headers=keyed(tenant, "old"))).status_code == 201
    async with database.transaction() as session:
        await session.execute(
            update(IdempotencyRecord).values(expires_at=utcnow() - timedelta(seconds=1))
        )
    # Past its 24 hours the key is new: the request runs (and meets the member it made).
    again = await client.post(path, json=body, headers=keyed(tenant, "old"))
    assert again.status_code == 409
    assert "Idempotent-Replayed" not in again.headers
    async with database.transaction() as session:
        expiries = (await session.execute(select(IdempotencyRecord.expires_at))).scalars().all()
    assert len(expiries) == 1
    assert expiries[0] > utcnow() + timedelta(hours=23)


async def test_a_request_while_the_key_is_held_elsewhere(
    client: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    """PostgreSQL: another replica's request holding the key gets 409 at once. SQLite (one
    writer at a time): the repeat waits for the holder and then runs."""
    tenant = await factory.tenant()
    path = f"{tenant.path}/members"
    body = {"email": "held@example.com", "role": "readonly"}
    async with database.sessionmaker() as holder:
        if database.is_sqlite:
            await holder.execute(text("DELETE FROM idempotency_keys WHERE 0"))
            waiting = asyncio.create_task(client.post(path, json=body, headers=keyed(tenant, "h")))
            await holder.commit()
            assert (await waiting).status_code == 201
            return
        lock_id = advisory_lock_id(tenant.id, "h")
        await holder.execute(select(func.pg_advisory_xact_lock(lock_id)))
        in_flight = await client.post(path, json=body, headers=keyed(tenant, "h"))
        assert in_flight.status_code == 409
        assert in_flight.json()["code"] == "IDEMPOTENCY_KEY_IN_FLIGHT"
        assert await member_emails(client, tenant) == [tenant.admin_email]
        await holder.commit()
    assert (await client.post(path, json=body, headers=keyed(tenant, "h"))).status_code == 201


async def test_concurrent_requests_with_one_key_make_one_resource(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    body = {"name": "race", "resources": {"cpu": "1", "memory": "1Gi", "storage": "1Gi"}}
    answers = await asyncio.gather(
        *(
            client.post(f"{tenant.path}/clusters", json=body, headers=keyed(tenant, "race"))
            for _ in range(4)
        )
    )
    created = [answer for answer in answers if answer.status_code == 201]
    others = [answer for answer in answers if answer.status_code != 201]
    assert created
    assert {answer.content for answer in created} == {created[0].content}
    assert all(answer.json()["code"] == "IDEMPOTENCY_KEY_IN_FLIGHT" for answer in others)
    assert await cluster_names(client, tenant) == ["race"]


async def test_another_principal_cannot_replay_a_key(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """A second admin repeating the first admin's key and body would be handed the first
    admin's answer (for createApiKey: its raw key, even once that key is revoked): the key is
    the principal's, and another principal's repeat is 422 IDEMPOTENCY_KEY_REUSED."""
    tenant = await factory.tenant()
    other_admin = await factory.api_key(tenant.id, Role.admin, display_name="second admin")
    body = {"displayName": "ci", "role": "readonly"}
    first = await client.post(f"{tenant.path}/apikeys", json=body, headers=keyed(tenant, "ak"))
    assert first.status_code == 201
    stolen = await client.post(
        f"{tenant.path}/apikeys",
        json=body,
        headers={**bearer(other_admin), "Idempotency-Key": "ak"},
    )
    assert stolen.status_code == 422, stolen.text
    assert stolen.json()["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert first.json()["key"] not in stolen.text
    # The first principal's own repeat is still its replay.
    again = await client.post(f"{tenant.path}/apikeys", json=body, headers=keyed(tenant, "ak"))
    assert again.json() == first.json()
