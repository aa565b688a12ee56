"""Hosts the receivers firewall must see as Alertmanager dials them: Go's net/http maps a
non-ASCII host through IDNA (UTS-46: full-width and circled digits, ideographic dots) before
it dials, so full-width `http://１２７．０．０．１/` reaches 127.0.0.1 (issue 35, findings 2 and
10)."""  # noqa: RUF002

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tenantplane.providers.alerting.render import dump_yaml
from tests.alerting.conftest import SharedAlertmanager
from tests.alerting.test_receivers_firewall import PLACES, SMARTHOSTS, Place, put_config
from tests.factories import Factory, TenantFixture
from tests.fakes.webhook import WebhookSink, running_webhook_sink
from tests.http_client import bearer

# Written forms of loopback, private and metadata hosts that Go's IDNA mapping turns into
# the ASCII address or name (percent-escapes are unescaped first, as URL.Hostname() does).
NON_ASCII_HOSTS = [
    "１２７．０．０．１",  # full-width digits and full stops  # noqa: RUF001
    "127。0。0。1",  # ideographic full stop U+3002
    "127｡0｡0｡1",  # half-width ideographic full stop U+FF61
    "127．0．0．1",  # full-width full stop U+FF0E  # noqa: RUF001
    "①②⑦.⓪.⓪.①",  # circled digits
    "¹²⁷.0.0.1",  # superscript digits
    "ｌｏｃａｌｈｏｓｔ",  # noqa: RUF001
    "ＬＯＣＡＬＨＯＳＴ",  # noqa: RUF001
    "localhost。",
    "１６９．２５４．１６９．２５４",  # the metadata service  # noqa: RUF001
    "⑩.0.0.1",
    "１２７.１",  # inet_aton's short form  # noqa: RUF001
    "%EF%BC%91%EF%BC%92%EF%BC%97.0.0.1",  # full-width 127, escaped
]
# Not ASCII and not a valid internationalised domain name: what Go would dial is unknown.
INVALID_HOSTS = ["a\u200db.example.com", "\u0301a.example.com", "%FF.example.com"]
NON_ASCII_SMARTHOSTS = ["１２７．０．０．１:25", "ｌｏｃａｌｈｏｓｔ:25", "127。0。0。1:6379"]  # noqa: RUF001


async def _config(client: httpx.AsyncClient, tenant: TenantFixture) -> Any:
    response = await client.get(f"{tenant.path}/alerting/config", headers=bearer(tenant.admin_key))
    assert response.status_code == 200, response.text
    return response.headers["ETag"], response.json()


async def _refused(
    client: httpx.AsyncClient, tenant: TenantFixture, config: dict[str, Any], field: str
) -> str:
    response = await put_config(client, tenant, config)
    assert response.status_code == 400, response.text
    body = response.json()
    assert (body["code"], body["field"]) == ("DESTINATION_BLOCKED", field), body
    return str(body["message"])


@pytest.mark.parametrize(("name", "place", "field"), PLACES, ids=[p[0] for p in PLACES])
async def test_every_url_field_refuses_non_ascii_forms_of_blocked_hosts(
    client: httpx.AsyncClient, factory: Factory, name: str, place: Place, field: str
) -> None:
    tenant = await factory.tenant()
    before = await _config(client, tenant)
    for host in [*NON_ASCII_HOSTS, *INVALID_HOSTS]:
        message = await _refused(client, tenant, place(f"http://{host}:8080/x"), field)
        assert "receivers may not send there" in message, (host, message)
    assert await _config(client, tenant) == before  # nothing changed
    # A valid internationalised name is a name like any other (checked as its A-labels).
    accepted = await put_config(client, tenant, place("https://bücher.example/x"))
    assert accepted.status_code == 200, accepted.text


@pytest.mark.parametrize(("name", "place", "field"), SMARTHOSTS, ids=[p[0] for p in SMARTHOSTS])
async def test_smarthosts_refuse_non_ascii_forms_of_blocked_hosts(
    client: httpx.AsyncClient, factory: Factory, name: str, place: Place, field: str
) -> None:
    tenant = await factory.tenant()
    before = await _config(client, tenant)
    for host in [*NON_ASCII_SMARTHOSTS, "a\u200db.example.com:25"]:
        await _refused(client, tenant, place(host), field)
    assert await _config(client, tenant) == before


# Names every Linux /etc/hosts (Debian, Red Hat) gives a loopback or non-public address,
# names under .localhost (RFC 6761), and IPv6 forms carrying a loopback address: SIIT
# (::ffff:0:0/96) and the local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215).
LOOPBACK_NAMES = [
    "ip6-localhost",
    "ip6-loopback",
    "IP6-LOCALHOST.",
    "localhost.localdomain",
    "localhost4",
    "localhost6",
    "localhost4.localdomain4",
    "localhost6.localdomain6",
    "ip6-localnet",
    "ip6-allnodes",
    "ip6-allrouters",
    "ip6-mcastprefix",
    "api.localhost",
    "a.b.LOCALHOST.",
    "[::ffff:0:7f00:1]",
    "[::ffff:0:127.0.0.1]",
    "[::ffff:0:a9fe:a9fe]",
    "[64:ff9b:1::7f00:1]",
    "[64:ff9b:1:7f00:0:100::]",
    "[64:ff9b:1:ffff::1]",
]


@pytest.mark.parametrize(("name", "place", "field"), PLACES, ids=[p[0] for p in PLACES])
async def test_every_url_field_refuses_loopback_names_and_rare_ipv6_forms(
    client: httpx.AsyncClient, factory: Factory, name: str, place: Place, field: str
) -> None:
    tenant = await factory.tenant()
    before = await _config(client, tenant)
    for host in LOOPBACK_NAMES:
        await _refused(client, tenant, place(f"http://{host}:8080/x"), field)
    assert await _config(client, tenant) == before
    # Public neighbours stay open: a name that only starts so, NAT64 of a public address.
    for host in ("localhost-api.example.com", "[64:ff9b::5db8:d70e]"):
        accepted = await put_config(client, tenant, place(f"https://{host}/x"))
        assert accepted.status_code == 200, (host, accepted.text)


@pytest.mark.parametrize(("name", "place", "field"), SMARTHOSTS, ids=[p[0] for p in SMARTHOSTS])
async def test_smarthosts_refuse_loopback_names_and_rare_ipv6_forms(
    client: httpx.AsyncClient, factory: Factory, name: str, place: Place, field: str
) -> None:
    tenant = await factory.tenant()
    for host in ("ip6-localhost:25", "localhost.localdomain:25", "[::ffff:0:7f00:1]:25"):
        await _refused(client, tenant, place(host), field)


@pytest.fixture
def sink() -> Iterator[WebhookSink]:
    with running_webhook_sink() as webhook_sink:
        yield webhook_sink


def _loopback_forms(port: int) -> list[str]:
    """The forms of 127.0.0.1 and localhost (the others name no loopback address, or one
    that only some resolvers read so: `127.1`, `localhost.`)."""
    others = ("１６９．２５４．１６９．２５４", "⑩.0.0.1", "１２７.１", "localhost。")  # noqa: RUF001
    return [f"http://{host}:{port}" for host in NON_ASCII_HOSTS if host not in others]


async def _reload(alertmanager: SharedAlertmanager, config: dict[str, Any]) -> None:
    alertmanager.config_file.write_text(dump_yaml(config), encoding="utf-8")
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{alertmanager.url}/-/reload")
    assert response.status_code == 200, response.text


async def test_the_real_alertmanager_dials_loopback_for_these_forms_and_the_api_refuses_them(
    shared_client: httpx.AsyncClient,
    shared_alertmanager: SharedAlertmanager,
    sink: WebhookSink,
    factory: Factory,
    unique: str,
) -> None:
    port = int(sink.url.rsplit(":", 1)[1])
    forms = _loopback_forms(port)
    # Written straight into its file (no API), every form reaches the loopback sink: the
    # mapping is Alertmanager's own, not an assumption of this test.
    original = shared_alertmanager.config_file.read_text()
    receivers = [
        {"name": f"{unique}{i}", "webhook_configs": [{"url": f"{url}/r{i}"}]}
        for i, url in enumerate(forms)
    ]
    routes = [
        {"receiver": f"{unique}{i}", "matchers": [f'r="{unique}{i}"']} for i in range(len(forms))
    ]
    await _reload(
        shared_alertmanager,
        {
            "route": {"receiver": f"{unique}0", "group_wait": "0s", "routes": routes},
            "receivers": receivers,
        },
    )
    try:
        now = datetime.now(UTC).isoformat()
        alerts = [
            {"labels": {"alertname": "x", "r": f"{unique}{i}"}, "startsAt": now}
            for i in range(len(forms))
        ]
        async with httpx.AsyncClient() as client:
            fired = await client.post(f"{shared_alertmanager.url}/api/v2/alerts", json=alerts)
        assert fired.status_code == 200, fired.text
        for i, url in enumerate(forms):
            assert await asyncio.to_thread(sink.wait_for, f"/r{i}", 20.0), url
    finally:
        shared_alertmanager.config_file.write_text(original, encoding="utf-8")
        async with httpx.AsyncClient() as client:
            await client.post(f"{shared_alertmanager.url}/-/reload")

    # Through the API (receivers firewall as deployed by default), each is refused and the
    # file Alertmanager loads is left as it was.
    tenant = await factory.tenant()
    before = shared_alertmanager.config_file.read_text()
    for url in forms:
        response = await shared_client.put(
            f"{tenant.path}/alerting/receivers/local",
            json={"webhook_configs": [{"url": f"{url}/api"}]},
            headers=bearer(tenant.admin_key),
        )
        assert response.status_code == 400, (url, response.text)
        assert response.json()["code"] == "DESTINATION_BLOCKED"
        assert response.json()["field"] == "webhook_configs[0].url"
    assert shared_alertmanager.config_file.read_text() == before
    assert sink.bodies("/api") == []


async def test_the_shared_alertmanager_stays_out_of_reach_in_every_written_form(
    loopback_shared_client: httpx.AsyncClient,
    shared_alertmanager: SharedAlertmanager,
    factory: Factory,
) -> None:
    """Even with private addresses allowed, no form of its own address reaches /-/reload."""
    tenant = await factory.tenant()
    port = int(shared_alertmanager.url.rsplit(":", 1)[1])
    before = shared_alertmanager.config_file.read_text()
    for host in [
        *(h for h in NON_ASCII_HOSTS if h not in ("１６９．２５４．１６９．２５４", "⑩.0.0.1")),  # noqa: RUF001
        "ip6-localhost",
        "localhost.localdomain",
        "localhost4",
        "[::ffff:0:7f00:1]",
        "[::ffff:0:127.0.0.1]",
    ]:
        response = await loopback_shared_client.put(
            f"{tenant.path}/alerting/receivers/reload",
            json={"webhook_configs": [{"url": f"http://{host}:{port}/-/reload"}]},
            headers=bearer(tenant.admin_key),
        )
        assert response.status_code == 400, (host, response.text)
        assert response.json()["code"] == "DESTINATION_BLOCKED", host
        assert response.json()["field"] == "webhook_configs[0].url"
    assert shared_alertmanager.config_file.read_text() == before
