"""expiresAt at the edges of the calendar, and one rendering of every timestamp (UTC, Z)."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.factories import Factory, TenantFixture
from tests.http_client import bearer

UTC_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$")


async def create_key(
    client: httpx.AsyncClient, tenant: TenantFixture, expires_at: str
) -> httpx.Response:
    return await client.post(
        f"{tenant.path}/apikeys",
        json={"displayName": "edge", "role": "readonly", "expiresAt": expires_at},
        headers=bearer(tenant.admin_key),
    )


@pytest.mark.parametrize(
    "expires_at",
    [
        "9999-12-31T23:59:59-14:00",  # year 10000 in UTC
        "9999-12-31T23:59:59.999999-00:01",
        "9999-12-31T23:30:00-23:59",
    ],
)
async def test_expiry_beyond_the_calendar_in_utc_is_400(
    client: httpx.AsyncClient, factory: Factory, expires_at: str
) -> None:
    tenant = await factory.tenant()
    response = await create_key(client, tenant, expires_at)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "DATETIME_OUT_OF_RANGE"
    assert response.json()["field"] == "expiresAt"
    listed = await client.get(f"{tenant.path}/apikeys", headers=bearer(tenant.admin_key))
    assert listed.status_code == 200  # the server still answers
    assert len(listed.json()["items"]) == 2  # the factory's two, nothing new


async def test_the_last_instant_of_the_calendar_is_accepted(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    response = await create_key(client, tenant, "9999-12-31T23:59:59+00:00")
    assert response.status_code == 201, response.text
    assert response.json()["expiresAt"] == "9999-12-31T23:59:59Z"
    read = await client.get(
        f"{tenant.path}/apikeys/{response.json()['id']}", headers=bearer(tenant.admin_key)
    )
    assert read.json()["expiresAt"] == "9999-12-31T23:59:59Z"


async def test_expiry_is_answered_in_utc_on_create_read_and_list(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    created = await create_key(client, tenant, "2030-01-01T02:00:00+02:00")
    assert created.status_code == 201, created.text
    assert created.json()["expiresAt"] == "2030-01-01T00:00:00Z"
    headers = bearer(tenant.admin_key)
    read = await client.get(f"{tenant.path}/apikeys/{created.json()['id']}", headers=headers)
    assert read.json()["expiresAt"] == "2030-01-01T00:00:00Z"
    listed = await client.get(f"{tenant.path}/apikeys", headers=headers)
    [item] = [key for key in listed.json()["items"] if key["id"] == created.json()["id"]]
    assert item["expiresAt"] == "2030-01-01T00:00:00Z"
    for body in (created.json(), read.json(), item):
        assert UTC_Z.match(body["createdAt"]), body["createdAt"]
