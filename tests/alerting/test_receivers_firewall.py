"""The receivers firewall: no integration may send to private, loopback, link-local or
operator-blocked addresses, nor to the shared Alertmanager itself."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tenantplane.config import Settings
from tests.alerting.conftest import SharedAlertmanager
from tests.conftest import make_settings
from tests.factories import Factory, TenantFixture
from tests.http_client import api_client, bearer, running_app

# Hosts (as written in a URL) that name local or private destinations.
BLOCKED_HOSTS = [
    "127.0.0.1:6379",
    "169.254.169.254",
    "[::1]",
    "[fc00::1]",
    "[fe80::1%25eth0]",
    "0.0.0.0",  # noqa: S104 (a destination refused, nothing binds)
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "100.100.100.200",
    "127.1",
    "2130706433",
    "[::ffff:169.254.169.254]",
    "localhost:9093",
]
PUBLIC_HOST = "93.184.215.14"
Place = Callable[[str], dict[str, Any]]


def _receiver(**integrations: Any) -> dict[str, Any]:
    return {
        "receivers": [{"name": "default"}, {"name": "r", **integrations}],
        "route": {"receiver": "default", "routes": [{"receiver": "r"}]},
    }


def _global(**settings: Any) -> dict[str, Any]:
    return {
        "global": settings,
        "receivers": [{"name": "default"}],
        "route": {"receiver": "default"},
    }


def _oauth2(url: str) -> dict[str, Any]:
    token = {"client_id": "a", "client_secret": "b", "token_url": url}
    return {"url": "https://hooks.example.com/", "http_config": {"oauth2": token}}


# Every field that names a destination: (how a URL or host:port is placed, its field path).
PLACES: list[tuple[str, Place, str]] = [
    (
        "webhook",
        lambda u: _receiver(webhook_configs=[{"url": u}]),
        "receivers[1].webhook_configs[0].url",
    ),
    (
        "slack",
        lambda u: _receiver(slack_configs=[{"api_url": u}]),
        "receivers[1].slack_configs[0].api_url",
    ),
    (
        "pagerduty",
        lambda u: _receiver(pagerduty_configs=[{"routing_key": "k", "url": u}]),
        "receivers[1].pagerduty_configs[0].url",
    ),
    (
        "opsgenie",
        lambda u: _receiver(opsgenie_configs=[{"api_key": "k", "api_url": u}]),
        "receivers[1].opsgenie_configs[0].api_url",
    ),
    (
        "discord",
        lambda u: _receiver(discord_configs=[{"webhook_url": u}]),
        "receivers[1].discord_configs[0].webhook_url",
    ),
    (
        "telegram",
        lambda u: _receiver(telegram_configs=[{"bot_token": "t", "chat_id": 1, "api_url": u}]),
        "receivers[1].telegram_configs[0].api_url",
    ),
    (
        "victorops",
        lambda u: _receiver(victorops_configs=[{"api_key": "k", "routing_key": "r", "api_url": u}]),
        "receivers[1].victorops_configs[0].api_url",
    ),
    (
        "webex",
        lambda u: _receiver(
            webex_configs=[{"room_id": "r", "api_url": u, "http_config": {"bearer_token": "t"}}]
        ),
        "receivers[1].webex_configs[0].api_url",
    ),
    (
        "oauth2-token-url",
        lambda u: _receiver(webhook_configs=[_oauth2(u)]),
        "receivers[1].webhook_configs[0].http_config.oauth2.token_url",
    ),
    (
        "global-oauth2-token-url",
        lambda u: _global(http_config={"oauth2": _oauth2(u)["http_config"]["oauth2"]}),
        "global.http_config.oauth2.token_url",
    ),
    ("global-slack", lambda u: _global(slack_api_url=u), "global.slack_api_url"),
    ("global-pagerduty", lambda u: _global(pagerduty_url=u), "global.pagerduty_url"),
    ("global-opsgenie", lambda u: _global(opsgenie_api_url=u), "global.opsgenie_api_url"),
    ("global-wechat", lambda u: _global(wechat_api_url=u), "global.wechat_api_url"),
    ("global-victorops", lambda u: _global(victorops_api_url=u), "global.victorops_api_url"),
    ("global-telegram", lambda u: _global(telegram_api_url=u), "global.telegram_api_url"),
    ("global-webex", lambda u: _global(webex_api_url=u), "global.webex_api_url"),
]
SMARTHOSTS: list[tuple[str, Place, str]] = [
    (
        "email",
        lambda h: _receiver(
            email_configs=[{"to": "a@example.com", "from": "b@example.com", "smarthost": h}]
        ),
        "receivers[1].email_configs[0].smarthost",
    ),
    ("global-smtp", lambda h: _global(smtp_smarthost=h), "global.smtp_smarthost"),
]


async def put_config(
    client: httpx.AsyncClient, tenant: TenantFixture, config: dict[str, Any]
) -> httpx.Response:
    return await client.put(
        f"{tenant.path}/alerting/config", json=config, headers=bearer(tenant.admin_key)
    )


@pytest.mark.parametrize(("name", "place", "field"), PLACES, ids=[p[0] for p in PLACES])
async def test_every_url_field_refuses_private_addresses(
    client: httpx.AsyncClient, factory: Factory, name: str, place: Place, field: str
) -> None:
    tenant = await factory.tenant()
    for host in BLOCKED_HOSTS:
        response = await put_config(client, tenant, place(f"http://{host}/x"))
        assert response.status_code == 400, (host, response.text)
        assert (response.json()["code"], response.json()["field"]) == ("DESTINATION_BLOCKED", field)
    accepted = await put_config(client, tenant, place(f"https://{PUBLIC_HOST}/x"))
    assert accepted.status_code == 200, accepted.text
    named = await put_config(client, tenant, place("https://hooks.example.com/x"))
    assert named.status_code == 200, named.text  # names are not resolved


@pytest.mark.parametrize(("name", "place", "field"), SMARTHOSTS, ids=[p[0] for p in SMARTHOSTS])
async def test_smarthosts_refuse_private_addresses(
    client: httpx.AsyncClient, factory: Factory, name: str, place: Place, field: str
) -> None:
    tenant = await factory.tenant()
    for host in ("127.0.0.1:6379", "[::1]:25", "169.254.169.254:25", "0.0.0.0:25", "localhost:25"):
        response = await put_config(client, tenant, place(host))
        assert response.status_code == 400, (host, response.text)
        assert (response.json()["code"], response.json()["field"]) == ("DESTINATION_BLOCKED", field)
    accepted = await put_config(client, tenant, place(f"{PUBLIC_HOST}:587"))
    assert accepted.status_code == 200, accepted.text


@pytest.fixture
async def cidr_client(
    factory: Factory, database_url: str, tmp_path: Path
) -> AsyncIterator[httpx.AsyncClient]:
    """Private addresses allowed, two networks blocked (a comma-separated setting)."""
    settings = make_settings(
        database_url,
        tmp_path,
        alerting_firewall_block_private=False,
        alerting_firewall_block_cidrs="203.0.113.0/24, 2001:db8::/32",
    )
    async with running_app(settings) as app, api_client(app) as client:
        yield client


async def test_operator_blocked_networks_are_refused(
    cidr_client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    webhook = PLACES[0][1]
    for host in ("203.0.113.9", "[2001:db8::5]", "[::ffff:203.0.113.9]"):
        response = await put_config(cidr_client, tenant, webhook(f"http://{host}/"))
        assert response.status_code == 400, (host, response.text)
        assert response.json()["code"] == "DESTINATION_BLOCKED"
    for host in ("127.0.0.1:8080", "10.0.0.1", PUBLIC_HOST):
        response = await put_config(cidr_client, tenant, webhook(f"http://{host}/"))
        assert response.status_code == 200, (host, response.text)


def test_blocked_networks_setting_takes_a_list_and_refuses_nonsense() -> None:
    # As the environment gives it: one comma-separated string.
    settings = Settings.model_validate({"alerting_firewall_block_cidrs": "10.0.0.0/8,fd00::/8"})
    assert settings.alerting_firewall_block_cidrs == ["10.0.0.0/8", "fd00::/8"]
    with pytest.raises(ValueError, match="does not appear to be an IPv4 or IPv6 network"):
        Settings.model_validate({"alerting_firewall_block_cidrs": "10.0.0.0/8,nonsense"})


async def test_the_shared_alertmanager_is_never_a_destination(
    loopback_shared_client: httpx.AsyncClient,
    shared_alertmanager: SharedAlertmanager,
    factory: Factory,
) -> None:
    """Even with private addresses allowed, its /-/reload (and API) stay out of reach."""
    tenant = await factory.tenant()
    port = urlsplit(shared_alertmanager.url).port
    assert port is not None
    before = shared_alertmanager.config_file.read_text()
    for url in (
        f"{shared_alertmanager.url}/-/reload",
        f"http://localhost:{port}/-/reload",
        f"http://0.0.0.0:{port}/-/reload",
        f"http://[::1]:{port}/-/reload",
        f"http://127.1:{port}/api/v2/silences",
        f"http://[::ffff:127.0.0.1]:{port}/-/reload",
    ):
        response = await loopback_shared_client.put(
            f"{tenant.path}/alerting/receivers/reload",
            json={"webhook_configs": [{"url": url}]},
            headers=bearer(tenant.admin_key),
        )
        assert response.status_code == 400, (url, response.text)
        assert response.json()["code"] == "DESTINATION_BLOCKED"
        assert response.json()["field"] == "webhook_configs[0].url"
    assert shared_alertmanager.config_file.read_text() == before
    elsewhere = await loopback_shared_client.put(
        f"{tenant.path}/alerting/receivers/reload",
        json={"webhook_configs": [{"url": f"http://127.0.0.1:{port + 1}/hook"}]},
        headers=bearer(tenant.admin_key),
    )
    assert elsewhere.status_code == 201, elsewhere.text


async def test_by_default_the_shared_alertmanager_refuses_local_destinations(
    shared_client: httpx.AsyncClient,
    shared_alertmanager: SharedAlertmanager,
    factory: Factory,
) -> None:
    tenant = await factory.tenant()
    before = shared_alertmanager.config_file.read_text()
    for body in (
        {"webhook_configs": [{"url": "http://169.254.169.254/latest/meta-data/"}]},
        {
            "email_configs": [
                {"to": "a@example.com", "from": "b@example.com", "smarthost": "127.0.0.1:6379"}
            ]
        },
    ):
        response = await shared_client.put(
            f"{tenant.path}/alerting/receivers/local",
            json=body,
            headers=bearer(tenant.admin_key),
        )
        assert response.status_code == 400, response.text
        assert response.json()["code"] == "DESTINATION_BLOCKED"
    assert shared_alertmanager.config_file.read_text() == before
