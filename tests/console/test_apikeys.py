"""The API keys pages: create shows the raw key once (on the answer, not after a redirect)
and it works against the API; a typed revoke makes it 401 there; readonly viewers get the
API's refusal explained, no controls, and a forged write is refused."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import httpx
from fastapi import FastAPI

from tenantplane.member.models import Role
from tests.console.session import console_session
from tests.factories import Factory, TenantFixture
from tests.http_client import bearer

NEW_KEY = re.compile(r'<code id="new-key">([^<]+)</code>')
KEY_ID = re.compile(r"<dt>Id</dt><dd><code>(ak-[0-9A-Za-z]+)</code>")


async def key_names(client: httpx.AsyncClient, tenant: TenantFixture) -> list[str]:
    listed = await client.get(f"{tenant.path}/apikeys", headers=bearer(tenant.admin_key))
    assert listed.status_code == 200
    return [item["displayName"] for item in listed.json()["items"]]


async def test_create_shows_the_key_once_and_it_works_against_the_api(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        form = await console.get("apikeys/new")
        assert 'type="date"' in form.text
        created = await console.post("apikeys", {"displayName": "CI deploys", "role": "readonly"})
        assert created.status_code == 201, created.text
        assert created.headers["cache-control"] == "no-store"
        assert 'class="secret-once"' in created.text
        assert '<button type="button" data-copy="new-key" hidden>Copy</button>' in created.text
        assert "cannot be shown again" in created.text
        found = NEW_KEY.search(created.text)
        assert found is not None
        raw_key = found.group(1)

        works = await client.get(f"{tenant.path}/clusters", headers=bearer(raw_key))
        assert works.status_code == 200
        # A readonly key: the API, not the console, decides what it may do.
        refused = await client.post(
            f"{tenant.path}/secrets", json={"name": "x", "secretPath": "a"}, headers=bearer(raw_key)
        )
        assert refused.status_code == 403

        listed = await console.get("apikeys")
        assert "CI deploys" in listed.text
        assert raw_key not in listed.text
        assert "CI deploys" in await key_names(client, tenant)


async def test_an_expiry_date_and_the_apis_refusals_are_shown_at_their_fields(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    later = (datetime.now(UTC).date() + timedelta(days=2)).isoformat()
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        created = await console.post(
            "apikeys", {"displayName": "temp", "role": "admin", "expiresAt": later}
        )
        assert created.status_code == 201, created.text
        listed = await client.get(f"{tenant.path}/apikeys", headers=bearer(tenant.admin_key))
        temp = next(item for item in listed.json()["items"] if item["displayName"] == "temp")
        assert temp["expiresAt"].startswith(f"{later}T00:00:00")

        past = await console.post(
            "apikeys", {"displayName": "old", "role": "admin", "expiresAt": "2001-01-01"}
        )
        assert past.status_code == 400
        assert 'id="f-expiresAt-error"' in past.text
        assert "in the future" in past.text
        garbled = await console.post(
            "apikeys", {"displayName": "odd", "role": "admin", "expiresAt": "soon"}
        )
        assert garbled.status_code == 400
        assert 'id="f-expiresAt-error"' in garbled.text
        nameless = await console.post("apikeys", {"displayName": "", "role": "admin"})
        assert nameless.status_code == 400
        assert 'id="f-displayName-error"' in nameless.text
        assert NEW_KEY.search(nameless.text) is None
        assert not {"old", "odd", ""} & set(await key_names(client, tenant))


async def test_revoke_needs_the_typed_name_and_the_key_then_gets_401(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        created = await console.post("apikeys", {"displayName": "build bot", "role": "admin"})
        assert created.status_code == 201
        raw_key = NEW_KEY.search(created.text)
        key_id = KEY_ID.search(created.text)
        assert raw_key is not None
        assert key_id is not None
        key_path = f"apikeys/{key_id.group(1)}"
        api_path = f"{tenant.path}/apikeys"
        assert (await client.get(api_path, headers=bearer(raw_key.group(1)))).status_code == 200

        detail = await console.get(key_path)
        assert 'data-confirm-for="revoke-button" data-confirm-text="build bot"' in detail.text
        mistyped = await console.post(f"{key_path}/revoke", {"confirm": "build"})
        assert mistyped.status_code == 400
        assert 'id="f-confirm-error"' in mistyped.text
        assert (await client.get(api_path, headers=bearer(raw_key.group(1)))).status_code == 200

        revoked = await console.post(f"{key_path}/revoke", {"confirm": "build bot"})
        assert revoked.status_code == 303
        assert revoked.headers["location"].startswith(console.url("apikeys"))
        assert (await client.get(api_path, headers=bearer(raw_key.group(1)))).status_code == 401
        assert "build bot" not in await key_names(client, tenant)
        assert (await console.get(key_path)).status_code == 404


async def test_a_readonly_member_gets_the_refusal_explained_and_no_controls(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await factory.member(tenant.id, "viewer@example.com", Role.readonly)
    before = await key_names(client, tenant)
    listed = await client.get(f"{tenant.path}/apikeys", headers=bearer(tenant.admin_key))
    some_key = listed.json()["items"][0]["id"]
    async with console_session(app, tenant.name, "viewer@example.com") as console:
        page = await console.get("apikeys")
        assert page.status_code == 403
        assert "API keys are managed by" in page.text
        assert "admin access required" in page.text  # the API's own words
        assert "Create API key" not in page.text
        form = await console.get("apikeys/new")
        assert f'action="/console/t/{tenant.name}/apikeys"' not in form.text
        assert form.status_code == 403
        assert "Only the tenant&#39;s admins" in form.text
        detail = await console.get(f"apikeys/{some_key}")
        assert detail.status_code == 403
        assert "Revoke API key" not in detail.text

        forged = await console.post("apikeys", {"displayName": "mine", "role": "admin"})
        assert forged.status_code == 403
        assert NEW_KEY.search(forged.text) is None
        forged_revoke = await console.post(f"apikeys/{some_key}/revoke", {"confirm": "x"})
        assert forged_revoke.status_code == 403
    assert await key_names(client, tenant) == before
