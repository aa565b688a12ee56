"""The character policy of free-text fields (docs/api.md): invisible and control characters
are refused wherever a person's text is stored, with one code."""

from __future__ import annotations

import httpx
import pytest

from tests.factories import Factory, TenantFixture
from tests.http_client import bearer

REFUSED = {
    "NUL": "\x00",
    "C0 unit separator": "\x1f",
    "tab": "\t",
    "newline": "\n",
    "DEL": "\x7f",
    "C1 next line": "\x85",
    "C1 CSI": "\x9b",
    "LRE": "\u202a",
    "RLO": "\u202e",
    "LRI": "\u2066",
    "PDI": "\u2069",
    "RLM": "\u200f",
    "zero-width space": "\u200b",
    "zero-width joiner": "\u200d",
    "word joiner": "\u2060",
    "BOM": "\ufeff",
    "line separator": "\u2028",
    "private use": "\ue000",
    "unassigned": "\U000e0080",
}
ACCEPTED = ["Ops team \u2013 Zürich", "日本の鍵", "deploy 😀", "a b"]


async def key_count(client: httpx.AsyncClient, tenant: TenantFixture) -> int:
    listed = await client.get(f"{tenant.path}/apikeys", headers=bearer(tenant.admin_key))
    assert listed.status_code == 200  # the server still answers
    return len(listed.json()["items"])


@pytest.mark.parametrize("character", REFUSED.values(), ids=REFUSED.keys())
async def test_api_key_display_name_refuses_invisible_and_control_characters(
    client: httpx.AsyncClient, factory: Factory, character: str
) -> None:
    tenant = await factory.tenant()
    response = await client.post(
        f"{tenant.path}/apikeys",
        json={"displayName": f"ci{character}key", "role": "readonly"},
        headers=bearer(tenant.admin_key),
    )
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "FORBIDDEN_CHARACTER"
    assert response.json()["field"] == "displayName"
    assert await key_count(client, tenant) == 2  # the factory's two


async def test_api_key_display_name_keeps_ordinary_text(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    for text in ACCEPTED:
        response = await client.post(
            f"{tenant.path}/apikeys",
            json={"displayName": text, "role": "readonly"},
            headers=bearer(tenant.admin_key),
        )
        assert response.status_code == 201, response.text
        assert response.json()["displayName"] == text


@pytest.mark.parametrize("character", ["\x00", "\u202e", "\u200b", "\ufeff"])
async def test_cluster_display_name_follows_the_same_policy(
    client: httpx.AsyncClient, factory: Factory, character: str
) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    created = await client.post(
        f"{tenant.path}/clusters",
        json={"name": "dev", "displayName": f"Dev{character}"},
        headers=headers,
    )
    assert created.status_code == 400, created.text
    assert created.json()["code"] == "FORBIDDEN_CHARACTER"
    assert created.json()["field"] == "displayName"
    assert (await client.get(f"{tenant.path}/clusters", headers=headers)).json()["items"] == []
    await factory.cluster_row(tenant.id, "dev")
    patched = await client.patch(
        f"{tenant.path}/clusters/dev", json={"displayName": f"Dev{character}"}, headers=headers
    )
    assert patched.status_code == 400, patched.text
    assert patched.json()["code"] == "FORBIDDEN_CHARACTER"


@pytest.mark.parametrize("character", ["\x00", "\u202e", "\u200b", "\u2066", "\ufeff"])
async def test_member_emails_refuse_invisible_and_control_characters(
    client: httpx.AsyncClient, factory: Factory, character: str
) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    response = await client.post(
        f"{tenant.path}/members",
        json={"email": f"ali{character}ce@example.com", "role": "readonly"},
        headers=headers,
    )
    assert response.status_code == 400, response.text
    assert response.json()["field"] == "email"
    members = await client.get(f"{tenant.path}/members", headers=headers)
    assert [item["email"] for item in members.json()["items"]] == [tenant.admin_email]
