from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from fastapi import FastAPI

from tenantplane.member.models import Role
from tests.factories import Factory
from tests.http_client import bearer


def in_days(days: int) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).isoformat().replace("+00:00", "Z")


async def test_create_returns_raw_key_once_and_metadata_later(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    expires = in_days(30)
    created = await client.post(
        f"{tenant.path}/apikeys",
        json={"displayName": "ci deploy", "role": "readonly", "expiresAt": expires},
        headers=bearer(tenant.admin_key),
    )
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["id"].startswith("ak-")
    assert body["key"].startswith("svc_")
    assert len(body["key"]) == 47
    assert body["displayName"] == "ci deploy"
    assert body["role"] == "readonly"
    assert body["createdBy"] == tenant.admin_email
    assert datetime.fromisoformat(body["expiresAt"]) == datetime.fromisoformat(expires)
    assert created.headers["ETag"] == '"1"'
    assert created.headers["Cache-Control"] == "no-store"

    fetched = await client.get(
        f"{tenant.path}/apikeys/{body['id']}", headers=bearer(tenant.admin_key)
    )
    assert fetched.status_code == 200
    assert fetched.headers["ETag"] == '"1"'
    assert "key" not in fetched.json()
    assert fetched.json()["createdAt"] == body["createdAt"]

    listed = await client.get(f"{tenant.path}/apikeys", headers=bearer(tenant.admin_key))
    assert listed.status_code == 200
    items = listed.json()["items"]
    assert body["id"] in {item["id"] for item in items}
    assert all("key" not in item for item in items)

    # The new key works, with its own role.
    as_new = await client.get(f"{tenant.path}", headers=bearer(body["key"]))
    assert as_new.status_code == 200
    denied = await client.get(f"{tenant.path}/apikeys", headers=bearer(body["key"]))
    assert denied.status_code == 403


async def test_key_created_by_key_records_the_accountable_email(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    first = await client.post(
        f"{tenant.path}/apikeys",
        json={"displayName": "a", "role": "admin"},
        headers=bearer(tenant.admin_key),
    )
    second = await client.post(
        f"{tenant.path}/apikeys",
        json={"displayName": "b", "role": "admin"},
        headers=bearer(first.json()["key"]),
    )
    assert second.json()["createdBy"] == tenant.admin_email


async def test_last_used_at_is_recorded_without_a_write_per_request(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    listed = await client.get(f"{tenant.path}/apikeys", headers=bearer(tenant.admin_key))
    admin = next(i for i in listed.json()["items"] if i["role"] == "admin")
    first_use = admin["lastUsedAt"]
    assert first_use is not None
    readonly = next(i for i in listed.json()["items"] if i["role"] == "readonly")
    assert "lastUsedAt" not in readonly  # never used
    again = await client.get(f"{tenant.path}/apikeys", headers=bearer(tenant.admin_key))
    admin_again = next(i for i in again.json()["items"] if i["id"] == admin["id"])
    # Within the resolution window the stored time does not move.
    assert admin_again["lastUsedAt"] == first_use


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"role": "admin"}, "displayName"),
        ({"displayName": "x"}, "role"),
        ({"displayName": "x", "role": "owner"}, "role"),
        ({"displayName": "", "role": "admin"}, "displayName"),
        ({"displayName": "x", "role": "admin", "expiresAt": "tomorrow"}, "expiresAt"),
        ({"displayName": "x", "role": "admin", "expiresAt": "2030-01-01T00:00:00"}, "expiresAt"),
        ({"displayName": "x", "role": "admin", "expiresAt": "2001-01-01T00:00:00Z"}, "expiresAt"),
        ({"displayName": "x", "role": "admin", "key": "svc_mine"}, "key"),
    ],
)
async def test_invalid_create_is_400_naming_the_field_and_creates_nothing(
    client: httpx.AsyncClient, factory: Factory, body: dict[str, str], field: str
) -> None:
    tenant = await factory.tenant()
    before = (await client.get(f"{tenant.path}/apikeys", headers=bearer(tenant.admin_key))).json()
    response = await client.post(
        f"{tenant.path}/apikeys", json=body, headers=bearer(tenant.admin_key)
    )
    assert response.status_code == 400, response.text
    assert response.json()["field"] == field
    assert response.json()["severity"] == "error"
    assert response.json()["code"] in {"VALIDATION_FAILED", "UNKNOWN_FIELD"}
    after = (await client.get(f"{tenant.path}/apikeys", headers=bearer(tenant.admin_key))).json()
    assert [i["id"] for i in after["items"]] == [i["id"] for i in before["items"]]


async def test_revocation_takes_effect_at_once(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    created = (
        await client.post(
            f"{tenant.path}/apikeys",
            json={"displayName": "temp", "role": "admin"},
            headers=bearer(tenant.admin_key),
        )
    ).json()
    assert (await client.get(tenant.path, headers=bearer(created["key"]))).status_code == 200
    revoked = await client.delete(
        f"{tenant.path}/apikeys/{created['id']}", headers=bearer(tenant.admin_key)
    )
    assert revoked.status_code == 204
    assert (await client.get(tenant.path, headers=bearer(created["key"]))).status_code == 401
    gone = await client.get(
        f"{tenant.path}/apikeys/{created['id']}", headers=bearer(tenant.admin_key)
    )
    assert gone.status_code == 404
    again = await client.delete(
        f"{tenant.path}/apikeys/{created['id']}", headers=bearer(tenant.admin_key)
    )
    assert again.status_code == 404


async def test_key_ids_are_validated_and_scoped_to_the_tenant(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant, other = await factory.tenant(), await factory.tenant()
    bad = await client.get(f"{tenant.path}/apikeys/not-a-key", headers=bearer(tenant.admin_key))
    assert bad.status_code == 400
    assert bad.json()["code"] == "INVALID_ID"
    foreign = (await client.get(f"{other.path}/apikeys", headers=bearer(other.admin_key))).json()
    foreign_id = foreign["items"][0]["id"]
    # Another tenant's key id is simply not found here; it cannot be read or revoked.
    for method in ("GET", "DELETE"):
        response = await client.request(
            method, f"{tenant.path}/apikeys/{foreign_id}", headers=bearer(tenant.admin_key)
        )
        assert response.status_code == 404


async def test_every_key_operation_needs_admin(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.readonly_key)
    some_id = "ak-" + "a" * 20
    calls = [
        ("POST", f"{tenant.path}/apikeys", {"displayName": "x", "role": "readonly"}),
        ("GET", f"{tenant.path}/apikeys", None),
        ("GET", f"{tenant.path}/apikeys/{some_id}", None),
        ("DELETE", f"{tenant.path}/apikeys/{some_id}", None),
    ]
    for method, path, body in calls:
        response = await client.request(method, path, json=body, headers=headers)
        assert response.status_code == 403, (method, path)
        assert response.json()["error"]


async def test_expired_key_is_401(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    key = await factory.api_key(
        tenant.id, Role.admin, expires_at=datetime.now(UTC) + timedelta(hours=1)
    )
    assert (await client.get(tenant.path, headers=bearer(key))).status_code == 200
    await factory.expire_api_key(key)
    # The row changed behind the API's back (nothing in the API moves an expiry): a process
    # reuses its lookup of the key for the cache time, checking the expiry it read on each use.
    await asyncio.sleep(app.state.settings.api_key_cache_seconds)
    response = await client.get(tenant.path, headers=bearer(key))
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
