"""`tenantplane member add`: the operator adds a tenant's admin; the member then acts as an
admin through OIDC."""

from __future__ import annotations

import json

import httpx

from tests.apikey.test_cli import invoke
from tests.factories import Factory
from tests.http_client import bearer
from tests.oidc_provider import MockProvider


async def test_an_operator_adds_an_admin_member(
    oidc_client: httpx.AsyncClient,
    factory: Factory,
    database_url: str,
    oidc_provider: MockProvider,
) -> None:
    tenant = await factory.tenant()
    boss = bearer(oidc_provider.id_token("boss@example.com"))
    assert (await oidc_client.get(tenant.path, headers=boss)).status_code == 403

    result = await invoke(
        database_url, "member", "add", tenant.name, "Boss@Example.com", "--role", "admin", "--json"
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "tenant": tenant.name,
        "member": {"email": "boss@example.com", "role": "admin"},
    }
    created = await oidc_client.post(
        f"{tenant.path}/apikeys", json={"displayName": "ci", "role": "readonly"}, headers=boss
    )
    assert created.status_code == 201, created.text
    assert created.json()["createdBy"] == "boss@example.com"


async def test_refusals_follow_the_documented_exit_codes(
    oidc_client: httpx.AsyncClient, factory: Factory, database_url: str
) -> None:
    tenant = await factory.tenant()
    unknown = await invoke(
        database_url, "member", "add", "nobody", "a@example.com", "--role", "admin", "--json"
    )
    assert unknown.exit_code == 1
    assert json.loads(unknown.stdout)["error"]["code"] == "NOT_FOUND"
    invalid = await invoke(
        database_url, "member", "add", tenant.name, "not-an-email", "--role", "admin", "--json"
    )
    assert invalid.exit_code == 2
    assert json.loads(invalid.stdout)["error"]["code"] == "VALIDATION_FAILED"
    no_role = await invoke(database_url, "member", "add", tenant.name, "a@example.com")
    assert no_role.exit_code == 2
    # The factory made the tenant's admin a member already.
    twice = await invoke(
        database_url,
        "member",
        "add",
        tenant.name,
        tenant.admin_email.upper(),
        "--role",
        "readonly",
        "--json",
    )
    assert twice.exit_code == 1
    assert json.loads(twice.stdout)["error"]["code"] == "ALREADY_EXISTS"
    members = await oidc_client.get(f"{tenant.path}/members", headers=bearer(tenant.admin_key))
    assert members.json()["items"] == [{"email": tenant.admin_email, "role": "admin"}]
