"""`tenantplane apikey create`: the operator gives a tenant that lost its last admin key a
new one, printed once; the printed key then works against the API."""

from __future__ import annotations

import asyncio
import json

import httpx
from sqlalchemy import func, select
from typer.testing import CliRunner, Result

from tenantplane.apikey.models import ApiKey
from tenantplane.cli import app as cli
from tenantplane.db.engine import Database
from tests.conftest import TEST_SECRET
from tests.factories import Factory
from tests.http_client import bearer


async def invoke(database_url: str, *args: str) -> Result:
    env = {"TENANTPLANE_DATABASE_URL": database_url, "TENANTPLANE_SECRET_KEY": TEST_SECRET}
    # The CLI runs its own event loop, as it does from a shell.
    return await asyncio.to_thread(CliRunner().invoke, cli, list(args), env=env)


async def test_a_tenant_without_admin_keys_gets_one_back(
    client: httpx.AsyncClient, factory: Factory, database_url: str
) -> None:
    tenant = await factory.tenant()
    lost = bearer(tenant.admin_key)
    [old] = [
        key
        for key in (await client.get(f"{tenant.path}/apikeys", headers=lost)).json()["items"]
        if key["role"] == "admin"
    ]
    revoked = await client.delete(f"{tenant.path}/apikeys/{old['id']}", headers=lost)
    assert revoked.status_code == 204
    assert (await client.get(f"{tenant.path}/apikeys", headers=lost)).status_code == 401

    result = await invoke(
        database_url,
        "apikey",
        "create",
        tenant.name,
        "--role",
        "admin",
        "--name",
        "recovery",
        "--json",
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["tenant"] == tenant.name
    created = document["apiKey"]
    assert set(created) == {"id", "key", "role", "displayName", "createdAt", "createdBy"}
    assert (created["role"], created["displayName"]) == ("admin", "recovery")
    assert created["createdBy"] == "platform-operator"

    headers = bearer(created["key"])
    listed = await client.get(f"{tenant.path}/apikeys", headers=headers)
    assert listed.status_code == 200
    assert created["id"] in {key["id"] for key in listed.json()["items"]}
    # An admin key: it can make the tenant's next keys itself.
    again = await client.post(
        f"{tenant.path}/apikeys", json={"displayName": "ci", "role": "readonly"}, headers=headers
    )
    assert again.status_code == 201, again.text


async def test_plain_output_ends_with_the_raw_key(
    client: httpx.AsyncClient, factory: Factory, database_url: str
) -> None:
    tenant = await factory.tenant()
    result = await invoke(database_url, "apikey", "create", tenant.name, "--role", "readonly")
    assert result.exit_code == 0, result.output
    raw_key = result.stdout.strip().splitlines()[-1]
    assert raw_key.startswith("svc_")
    assert (await client.get(tenant.path, headers=bearer(raw_key))).status_code == 200
    refused = await client.post(
        f"{tenant.path}/apikeys",
        json={"displayName": "x", "role": "admin"},
        headers=bearer(raw_key),
    )
    assert refused.status_code == 403  # readonly, as asked


async def test_refusals_follow_the_documented_exit_codes(
    database: Database, factory: Factory, database_url: str
) -> None:
    tenant = await factory.tenant()
    unknown = await invoke(database_url, "apikey", "create", "nobody", "--role", "admin", "--json")
    assert unknown.exit_code == 1
    assert json.loads(unknown.stdout)["error"]["code"] == "NOT_FOUND"
    plain = await invoke(database_url, "apikey", "create", "nobody", "--role", "admin")
    assert plain.exit_code == 1
    assert plain.output.strip() == "error: tenant nobody not found"

    no_role = await invoke(database_url, "apikey", "create", tenant.name)
    assert no_role.exit_code == 2
    bad_role = await invoke(database_url, "apikey", "create", tenant.name, "--role", "root")
    assert bad_role.exit_code == 2
    hidden = await invoke(
        database_url,
        "apikey",
        "create",
        tenant.name,
        "--role",
        "admin",
        "--name",
        "a\u202eb",
        "--json",
    )
    assert hidden.exit_code == 2
    assert json.loads(hidden.stdout)["error"]["code"] == "FORBIDDEN_CHARACTER"
    # Only the factory's two keys: nothing was issued by the refused commands.
    async with database.sessionmaker() as session:
        count = (await session.execute(select(func.count()).select_from(ApiKey))).scalar()
    assert count == 2
