"""The webhooks API: create (the secret shown once), list, read, change, delete, rotate the
secret, page the deliveries; admins only; audited without secrets. Validation:
test_validation.py."""

from __future__ import annotations

import base64
from pathlib import Path

import httpx
from sqlalchemy import select

from tenantplane.db.engine import Database
from tenantplane.event.webhook.models import Webhook
from tenantplane.event.webhook.service import MAX_WEBHOOKS
from tenantplane.keys import KeyRing, decrypt_stored
from tests.conftest import TEST_SECRET, make_settings
from tests.event.webhook.conftest import create_webhook
from tests.factories import Factory, TenantFixture
from tests.http_client import api_client, bearer, running_app

# Never resolves (RFC 6761): the app's reconcilers here send nothing anywhere.
HOOK = "https://hooks.example.invalid/tenantplane"


async def stored(database: Database, webhook_id: str) -> Webhook:
    async with database.transaction() as session:
        return (await session.execute(select(Webhook).where(Webhook.id == webhook_id))).scalar_one()


async def test_create_shows_the_secret_once_and_never_again(
    client: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    response = await client.post(
        f"{tenant.path}/webhooks",
        json={"url": HOOK, "events": ["cluster.*", "invoice.past_due"], "description": "ops"},
        headers=headers,
    )
    assert response.status_code == 201, response.text
    created = response.json()
    secret = created["secret"]
    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) >= 24
    assert response.headers["location"].endswith(f"{tenant.path}/webhooks/{created['id']}")
    assert response.headers["etag"] == '"1"'
    assert response.headers["cache-control"] == "no-store"
    assert created["events"] == ["cluster.*", "invoice.past_due"]
    assert (created["enabled"], created["description"]) == (True, "ops")

    one = await client.get(f"{tenant.path}/webhooks/{created['id']}", headers=headers)
    listed = await client.get(f"{tenant.path}/webhooks", headers=headers)
    assert one.status_code == listed.status_code == 200
    assert one.headers["etag"] == '"1"'
    assert {key: value for key, value in created.items() if key != "secret"} == one.json()
    assert listed.json() == {"items": [one.json()]}
    for answer in (one, listed):
        assert "secret" not in answer.text
        assert secret not in answer.text
    # Stored encrypted only.
    row = await stored(database, created["id"])
    assert secret.encode() not in row.secret
    assert decrypt_stored(KeyRing(TEST_SECRET.encode()), row.secret, row.key_derivation) == secret


async def test_only_admins_may_read_or_write_webhooks(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    created = await create_webhook(client, tenant, HOOK, ["*"])
    readonly = bearer(tenant.readonly_key)
    path = f"{tenant.path}/webhooks"
    attempts = [
        ("GET", path, None),
        ("GET", f"{path}/{created['id']}", None),
        ("GET", f"{path}/{created['id']}/deliveries", None),
        ("POST", path, {"url": HOOK, "events": ["*"]}),
        ("PATCH", f"{path}/{created['id']}", {"enabled": False}),
        ("POST", f"{path}/{created['id']}/rotate-secret", None),
        ("POST", f"{path}/{created['id']}/ping", None),
        ("DELETE", f"{path}/{created['id']}", None),
    ]
    for method, url, body in attempts:
        response = await client.request(method, url, json=body, headers=readonly)
        assert response.status_code == 403, (method, url, response.text)
    other = await factory.tenant()
    refused = await client.get(f"{tenant.path}/webhooks", headers=bearer(other.admin_key))
    assert refused.status_code == 403
    # Nothing changed.
    still = await client.get(f"{path}/{created['id']}", headers=bearer(tenant.admin_key))
    assert still.json()["enabled"] is True


async def test_patch_changes_what_it_names_under_if_match(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    created = await create_webhook(client, tenant, HOOK, ["*"])
    path = f"{tenant.path}/webhooks/{created['id']}"

    stale = await client.patch(
        path, json={"enabled": False}, headers={**headers, "If-Match": '"7"'}
    )
    assert stale.status_code == 412
    assert stale.json()["code"] == "PRECONDITION_FAILED"

    patched = await client.patch(
        path,
        json={"events": ["secret.*"], "description": "secrets only", "enabled": False},
        headers={**headers, "If-Match": '"1"'},
    )
    assert patched.status_code == 200, patched.text
    assert patched.headers["etag"] == '"2"'
    body = patched.json()
    assert (body["events"], body["description"], body["enabled"], body["url"]) == (
        ["secret.*"],
        "secrets only",
        False,
        HOOK,
    )
    # Without If-Match, and a change of URL only.
    moved = await client.patch(path, json={"url": HOOK + "/v2"}, headers=headers)
    assert (moved.json()["url"], moved.json()["events"]) == (HOOK + "/v2", ["secret.*"])
    assert moved.headers["etag"] == '"3"'
    # The same values again change nothing: the version stays.
    again = await client.patch(path, json={"url": HOOK + "/v2"}, headers=headers)
    assert again.headers["etag"] == '"3"'

    for body, field, code in [
        ({}, None, "NO_UPDATABLE_FIELDS"),
        ({"url": None}, "url", "VALIDATION_FAILED"),
        ({"enabled": None}, "enabled", "VALIDATION_FAILED"),
        ({"events": []}, "events", "VALIDATION_FAILED"),
        ({"url": "gopher://x.com/"}, "url", "INVALID_URL"),
        ({"secret": "x"}, "secret", "UNKNOWN_FIELD"),
    ]:
        refused = await client.patch(path, json=body, headers=headers)
        assert refused.status_code == 400, (body, refused.text)
        assert (refused.json().get("field"), refused.json()["code"]) == (field, code)


async def test_delete_then_gone(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    created = await create_webhook(client, tenant, HOOK, ["*"])
    path = f"{tenant.path}/webhooks/{created['id']}"
    refused = await client.delete(path, headers={**headers, "If-Match": '"9"'})
    assert refused.status_code == 412
    deleted = await client.delete(path, headers={**headers, "If-Match": '"1"'})
    assert deleted.status_code == 204
    for method in ("GET", "DELETE", "PATCH"):
        body = {"enabled": True} if method == "PATCH" else None
        response = await client.request(method, path, json=body, headers=headers)
        assert response.status_code == 404, (method, response.text)
        assert response.json()["code"] == "NOT_FOUND"
    assert (await client.get(f"{tenant.path}/webhooks", headers=headers)).json()["items"] == []


async def test_ids_are_checked_and_scoped_to_the_tenant(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant, other = await factory.tenant(), await factory.tenant()
    created = await create_webhook(client, tenant, HOOK, ["*"])
    malformed = await client.get(f"{tenant.path}/webhooks/nope", headers=bearer(tenant.admin_key))
    assert malformed.status_code == 400
    assert (malformed.json()["code"], malformed.json()["field"]) == ("INVALID_ID", "id")
    bad_delivery = await client.get(
        f"{tenant.path}/webhooks/{created['id']}/deliveries/x", headers=bearer(tenant.admin_key)
    )
    assert (bad_delivery.json()["code"], bad_delivery.json()["field"]) == ("INVALID_ID", "delivery")
    # Another tenant's admin, in its own tenant, does not find it.
    elsewhere = await client.get(
        f"{other.path}/webhooks/{created['id']}", headers=bearer(other.admin_key)
    )
    assert elsewhere.status_code == 404


async def test_rotation_shows_a_new_secret_once(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    created = await create_webhook(client, tenant, HOOK, ["*"])
    path = f"{tenant.path}/webhooks/{created['id']}"
    rotated = await client.post(f"{path}/rotate-secret", headers=headers)
    assert rotated.status_code == 200, rotated.text
    assert rotated.headers["cache-control"] == "no-store"
    assert rotated.headers["etag"] == '"2"'
    body = rotated.json()
    assert body["secret"].startswith("whsec_")
    assert body["secret"] != created["secret"]
    assert body["previousSecretExpiresAt"].endswith("Z")
    read = await client.get(path, headers=headers)
    assert read.json()["previousSecretExpiresAt"] == body["previousSecretExpiresAt"]
    assert body["secret"] not in read.text
    assert created["secret"] not in read.text
    stale = await client.post(f"{path}/rotate-secret", headers={**headers, "If-Match": '"1"'})
    assert stale.status_code == 412


async def test_a_repeat_under_its_idempotency_key_is_answered_and_changes_nothing(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """Rotate, ping and redeliver are safe to retry: a repeat under the same key gets the
    first answer (the same new secret, the same delivery) and rotates or sends nothing."""
    tenant = await factory.tenant()
    # Subscribed to nothing the test writes: its deliveries are the pings' only.
    created = await create_webhook(client, tenant, HOOK, ["invoice.past_due"])
    path = f"{tenant.path}/webhooks/{created['id']}"

    async def twice(suffix: str, key: str) -> tuple[httpx.Response, httpx.Response]:
        headers = {**bearer(tenant.admin_key), "Idempotency-Key": key}
        first = await client.post(f"{path}{suffix}", headers=headers)
        repeat = await client.post(f"{path}{suffix}", headers=headers)
        assert first.status_code < 300, first.text
        assert repeat.headers["Idempotent-Replayed"] == "true"
        assert (repeat.status_code, repeat.json()) == (first.status_code, first.json())
        return first, repeat

    rotated, _ = await twice("/rotate-secret", "rotate-1")
    read = await client.get(path, headers=bearer(tenant.admin_key))
    assert read.headers["etag"] == rotated.headers["etag"] == '"2"'  # rotated once
    pinged, _ = await twice("/ping", "ping-1")
    delivery = pinged.json()["id"]
    await twice(f"/deliveries/{delivery}/redeliver", "redeliver-1")
    listed = await client.get(f"{path}/deliveries", headers=bearer(tenant.admin_key))
    assert len(listed.json()["items"]) == 2  # the ping's and one redelivery


async def test_a_tenant_has_at_most_the_limit_of_webhooks(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    for index in range(MAX_WEBHOOKS):
        await create_webhook(client, tenant, f"{HOOK}/{index}", ["*"])
    refused = await client.post(
        f"{tenant.path}/webhooks",
        json={"url": HOOK, "events": ["*"]},
        headers=bearer(tenant.admin_key),
    )
    assert refused.status_code == 409
    assert refused.json()["code"] == "WEBHOOK_LIMIT_REACHED"
    # Another tenant is not limited by it.
    other = await factory.tenant()
    await create_webhook(client, other, HOOK, ["*"])


async def test_the_list_pages_oldest_first(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    made = [(await create_webhook(client, tenant, f"{HOOK}/{i}", ["*"]))["id"] for i in range(5)]
    seen: list[str] = []
    params: dict[str, str | int] = {"limit": 2}
    while True:
        page = await client.get(
            f"{tenant.path}/webhooks", params=params, headers=bearer(tenant.admin_key)
        )
        assert page.status_code == 200, page.text
        seen.extend(item["id"] for item in page.json()["items"])
        token = page.json().get("continue")
        if token is None:
            break
        params = {"limit": 2, "continue": token}
    assert seen == made


async def test_create_and_changes_are_audited_without_the_secret(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant: TenantFixture = await factory.tenant()
    headers = bearer(tenant.admin_key)
    created = await create_webhook(client, tenant, HOOK, ["*"])
    rotated = await client.post(
        f"{tenant.path}/webhooks/{created['id']}/rotate-secret", headers=headers
    )
    events = await client.get(f"{tenant.path}/events", params={"kind": "webhook"}, headers=headers)
    assert events.status_code == 200, events.text
    actions = [(item["action"], item["resource"]["name"]) for item in events.json()["items"]]
    assert actions == [
        ("webhook.secret.rotate", created["id"]),
        ("webhook.create", created["id"]),
    ]
    assert created["secret"] not in events.text
    assert rotated.json()["secret"] not in events.text


async def test_deliveries_page_newest_first(
    database: Database, database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    settings = make_settings(database_url, tmp_path, run_reconcilers=False)
    async with running_app(settings) as app, api_client(app) as client:
        created = await create_webhook(client, tenant, HOOK, ["nothing.here"])
        path = f"{tenant.path}/webhooks/{created['id']}"
        pinged = []
        for _ in range(5):
            answer = await client.post(f"{path}/ping", headers=headers)
            assert answer.status_code == 202, answer.text
            pinged.append(answer.json()["id"])
        seen: list[str] = []
        params: dict[str, str | int] = {"limit": 2}
        while True:
            page = await client.get(f"{path}/deliveries", params=params, headers=headers)
            assert page.status_code == 200, page.text
            seen.extend(item["id"] for item in page.json()["items"])
            token = page.json().get("continue")
            if token is None:
                break
            params = {"limit": 2, "continue": token}
        assert seen == pinged[::-1]
        whole = await client.get(f"{path}/deliveries", headers=headers)
        assert [item["id"] for item in whole.json()["items"]] == pinged[::-1]
        assert {item["state"] for item in whole.json()["items"]} == {"pending"}
        # A token of one webhook's list is refused by another's.
        other = await create_webhook(client, tenant, HOOK, ["nothing.here"])
        first = await client.get(f"{path}/deliveries", params={"limit": 2}, headers=headers)
        refused = await client.get(
            f"{tenant.path}/webhooks/{other['id']}/deliveries",
            params={"limit": 2, "continue": first.json()["continue"]},
            headers=headers,
        )
        assert (refused.status_code, refused.json()["field"]) == (400, "continue")
