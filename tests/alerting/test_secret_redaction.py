"""Credentials in receivers and the global section: admins see them, readonly members see
`<secret>`, and `<secret>` written back keeps the stored value."""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx

from tenantplane.alerting.redaction import INTEGRATION_SECRETS
from tenantplane.alerting.validation.integrations import INTEGRATIONS
from tests.factories import Factory, TenantFixture
from tests.http_client import bearer

_counter = itertools.count()


def secret() -> str:
    return f"sentinel-{next(_counter)}"


def secret_url() -> str:
    return f"https://hooks.example.com/{secret()}"


def basic() -> dict[str, Any]:
    return {"basic_auth": {"username": "u", "password": secret()}}


def every_credential() -> dict[str, Any]:
    """Every credential field of every supported integration and of the global section."""
    glob = {
        "smtp_auth_password": secret(),
        "smtp_auth_secret": secret(),
        "slack_api_url": secret_url(),
        "opsgenie_api_key": secret(),
        "wechat_api_secret": secret(),
        "victorops_api_key": secret(),
        "http_config": basic(),
    }
    webhooks = [
        {"url": secret_url(), "http_config": basic()},
        {"url": secret_url(), "http_config": {"authorization": {"credentials": secret()}}},
        {"url": secret_url(), "http_config": {"bearer_token": secret()}},
        {
            "url": secret_url(),
            "http_config": {
                "oauth2": {
                    "client_id": "id",
                    "client_secret": secret(),
                    "token_url": "https://auth.example.com/token",
                }
            },
        },
    ]
    receiver = {
        "name": "everything",
        "email_configs": [
            {
                "to": "ops@example.com",
                "from": "am@example.com",
                "smarthost": "mail.example.com:587",
                "auth_username": "am",
                "auth_password": secret(),
                "auth_secret": secret(),
            }
        ],
        "slack_configs": [{"api_url": secret_url(), "http_config": basic()}],
        "webhook_configs": webhooks,
        "pagerduty_configs": [
            {"routing_key": secret(), "service_key": secret(), "http_config": basic()}
        ],
        "opsgenie_configs": [{"api_key": secret(), "http_config": basic()}],
        "discord_configs": [{"webhook_url": secret_url(), "http_config": basic()}],
        "telegram_configs": [{"bot_token": secret(), "chat_id": 1, "http_config": basic()}],
        "pushover_configs": [{"user_key": secret(), "token": secret(), "http_config": basic()}],
        "victorops_configs": [{"api_key": secret(), "routing_key": "ops", "http_config": basic()}],
        "webex_configs": [{"room_id": "r", "http_config": {"bearer_token": secret()}}],
    }
    return {
        "global": glob,
        "receivers": [{"name": "default"}, receiver],
        "route": {"receiver": "default", "routes": [{"receiver": "everything"}]},
    }


SENTINEL = "sentinel-"


async def configured(client: httpx.AsyncClient, factory: Factory) -> TenantFixture:
    tenant = await factory.tenant()
    written = await client.put(
        f"{tenant.path}/alerting/config",
        json=every_credential(),
        headers=bearer(tenant.admin_key),
    )
    assert written.status_code == 200, written.text
    return tenant


def test_every_supported_integration_has_its_credentials_listed() -> None:
    assert set(INTEGRATION_SECRETS) == set(INTEGRATIONS)


async def test_readonly_reads_show_secret_on_every_credential(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await configured(client, factory)
    config = every_credential()
    expected = json.dumps(config).count(SENTINEL)
    readonly = bearer(tenant.readonly_key)
    for path in ("config", "receivers", "receivers/everything", "global"):
        response = await client.get(f"{tenant.path}/alerting/{path}", headers=readonly)
        assert response.status_code == 200, response.text
        assert SENTINEL not in response.text, path
    whole = await client.get(f"{tenant.path}/alerting/config", headers=readonly)
    assert whole.text.count('"<secret>"') == expected
    # The rest stays readable: names, usernames, addresses.
    receiver = whole.json()["receivers"][1]
    assert receiver["email_configs"][0]["auth_username"] == "am"
    assert receiver["webhook_configs"][3]["http_config"]["oauth2"]["client_id"] == "id"

    admin = await client.get(f"{tenant.path}/alerting/config", headers=bearer(tenant.admin_key))
    assert admin.text.count(SENTINEL) == expected
    assert "<secret>" not in admin.text


async def test_a_readonly_read_written_back_by_an_admin_keeps_every_credential(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await configured(client, factory)
    admin = bearer(tenant.admin_key)
    before = await client.get(f"{tenant.path}/alerting/config", headers=admin)
    redacted = await client.get(
        f"{tenant.path}/alerting/config", headers=bearer(tenant.readonly_key)
    )

    same = await client.put(
        f"{tenant.path}/alerting/config",
        json=redacted.json(),
        headers={**admin, "If-Match": redacted.headers["ETag"]},
    )
    assert same.status_code == 200, same.text
    assert same.headers["ETag"] == before.headers["ETag"]  # nothing changed
    assert same.json() == before.json()

    # A real change alongside the placeholders: only the change is applied.
    changed = redacted.json()
    changed["route"]["group_wait"] = "10s"
    written = await client.put(f"{tenant.path}/alerting/config", json=changed, headers=admin)
    assert written.status_code == 200, written.text
    after = await client.get(f"{tenant.path}/alerting/config", headers=admin)
    assert after.json()["receivers"] == before.json()["receivers"]
    assert after.json()["global"] == before.json()["global"]
    assert after.json()["route"]["group_wait"] == "10s"


async def test_receiver_and_global_round_trips_keep_credentials(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await configured(client, factory)
    admin = bearer(tenant.admin_key)
    readonly = bearer(tenant.readonly_key)
    before = await client.get(f"{tenant.path}/alerting/config", headers=admin)
    for path in ("receivers/everything", "global"):
        redacted = await client.get(f"{tenant.path}/alerting/{path}", headers=readonly)
        written = await client.put(
            f"{tenant.path}/alerting/{path}", json=redacted.json(), headers=admin
        )
        assert written.status_code == 200, (path, written.text)
        assert SENTINEL in written.text
    after = await client.get(f"{tenant.path}/alerting/config", headers=admin)
    assert after.json() == before.json()
    assert after.headers["ETag"] == before.headers["ETag"]


async def test_a_placeholder_with_nothing_stored_is_refused(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await configured(client, factory)
    admin = bearer(tenant.admin_key)
    for body, field in (
        ({"webhook_configs": [{"url": "<secret>"}]}, "webhook_configs[0].url"),
        (
            {
                "webhook_configs": [
                    {"url": "https://x.example.com/", "http_config": {"bearer_token": "<secret>"}}
                ]
            },
            "webhook_configs[0].http_config.bearer_token",
        ),
    ):
        refused = await client.put(
            f"{tenant.path}/alerting/receivers/new", json=body, headers=admin
        )
        assert refused.status_code == 400, refused.text
        assert refused.json()["code"] == "SECRET_NOT_STORED"
        assert refused.json()["field"] == field
    # A placeholder moved to another integration's position has nothing behind it either.
    moved = {"name": "everything", "webhook_configs": [{"url": "<secret>"}] * 5}
    refused = await client.put(
        f"{tenant.path}/alerting/receivers/everything", json=moved, headers=admin
    )
    assert refused.status_code == 400, refused.text
    assert refused.json()["field"] == "webhook_configs[4].url"
    config = await client.get(f"{tenant.path}/alerting/config", headers=admin)
    assert config.headers["ETag"] == '"2"'
