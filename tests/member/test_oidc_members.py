"""Members added through the API act with their role, authenticated by tokens from a real
OpenID provider (oidc-provider-mock on loopback)."""

from __future__ import annotations

from pathlib import Path

import httpx

from tenantplane.db.engine import Database
from tests.conftest import make_settings
from tests.factories import Factory
from tests.http_client import api_client, bearer, running_app
from tests.oidc_provider import MockProvider


async def test_members_added_through_the_api_act_with_their_role(
    oidc_client: httpx.AsyncClient, factory: Factory, oidc_provider: MockProvider
) -> None:
    tenant, other = await factory.tenant(), await factory.tenant()
    for email, role in (("Reader@Example.com", "readonly"), ("boss@example.com", "admin")):
        added = await oidc_client.post(
            f"{tenant.path}/members",
            json={"email": email, "role": role},
            headers=bearer(tenant.admin_key),
        )
        assert added.status_code == 201, added.text
    # The provider spells the address its own way; membership is case-insensitive.
    reader = bearer(oidc_provider.id_token("reader@EXAMPLE.com"))
    boss = bearer(oidc_provider.id_token("boss@example.com"))

    # readonly: reads the tenant's resources, changes nothing.
    assert (await oidc_client.get(tenant.path, headers=reader)).status_code == 200
    members = await oidc_client.get(f"{tenant.path}/members", headers=reader)
    assert members.status_code == 200
    assert {"email": "reader@example.com", "role": "readonly"} in members.json()["items"]
    key_request = {"displayName": "from oidc", "role": "readonly"}
    denied = await oidc_client.post(f"{tenant.path}/apikeys", json=key_request, headers=reader)
    assert denied.status_code == 403

    # admin: creates API keys, recorded as created by the member.
    created = await oidc_client.post(f"{tenant.path}/apikeys", json=key_request, headers=boss)
    assert created.status_code == 201, created.text
    assert created.json()["createdBy"] == "boss@example.com"
    as_new_key = await oidc_client.get(tenant.path, headers=bearer(created.json()["key"]))
    assert as_new_key.status_code == 200
    promoted = await oidc_client.patch(
        f"{tenant.path}/members/reader@example.com", json={"role": "admin"}, headers=boss
    )
    assert promoted.status_code == 200

    # Neither touches another tenant.
    for token in (reader, boss):
        assert (await oidc_client.get(other.path, headers=token)).status_code == 403
        assert (await oidc_client.get(f"{other.path}/members", headers=token)).status_code == 403
        intrusion = await oidc_client.post(f"{other.path}/apikeys", json=key_request, headers=token)
        assert intrusion.status_code == 403


async def test_removed_member_loses_access_at_once(
    oidc_client: httpx.AsyncClient, factory: Factory, oidc_provider: MockProvider
) -> None:
    tenant = await factory.tenant()
    await oidc_client.post(
        f"{tenant.path}/members",
        json={"email": "leaver@example.com", "role": "readonly"},
        headers=bearer(tenant.admin_key),
    )
    token = bearer(oidc_provider.id_token("leaver@example.com"))
    assert (await oidc_client.get(tenant.path, headers=token)).status_code == 200
    removed = await oidc_client.delete(
        f"{tenant.path}/members/leaver@example.com", headers=bearer(tenant.admin_key)
    )
    assert removed.status_code == 204
    assert (await oidc_client.get(tenant.path, headers=token)).status_code == 403


async def test_provider_token_with_unverified_email_is_401(
    oidc_client: httpx.AsyncClient, factory: Factory, oidc_provider: MockProvider
) -> None:
    tenant = await factory.tenant()
    await factory.member(tenant.id, "unsure@example.com")
    token = oidc_provider.id_token("unsure@example.com", verified=False)
    assert (await oidc_client.get(tenant.path, headers=bearer(token))).status_code == 401
    verified = oidc_provider.id_token("unsure@example.com")
    assert (await oidc_client.get(tenant.path, headers=bearer(verified))).status_code == 200


async def test_provider_token_for_another_client_is_401(
    database: Database,
    database_url: str,
    tmp_path: Path,
    factory: Factory,
    oidc_provider: MockProvider,
) -> None:
    tenant = await factory.tenant()
    await factory.member(tenant.id, "reader@example.com")
    settings = make_settings(
        database_url, tmp_path, oidc_issuer=oidc_provider.issuer, oidc_audience="another-app"
    )
    async with running_app(settings) as app, api_client(app) as client:
        token = bearer(oidc_provider.id_token("reader@example.com"))
        assert (await client.get(tenant.path, headers=token)).status_code == 401
