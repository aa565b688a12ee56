"""Where a webhook may send: its URL as httpx reads it, its host through the destinations
firewall when written, and every address its name resolves to before each attempt, the
connection made to a judged address only."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tenantplane.event.webhook import destination
from tenantplane.event.webhook.destination import (
    DestinationRefused,
    check_url,
    firewall_from_settings,
    resolve,
)
from tenantplane.http.errors import ValidationFailed
from tenantplane.http.firewall import Firewall
from tests.conftest import make_settings
from tests.event.webhook.receiver import Receiver

DEFAULT = Firewall()
OPEN = Firewall(block_private=False)


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/tenantplane?key=1",
        "http://hooks.example.com:8080/",
        "https://bücher.example/hook",
        "https://203.0.113.7/hook",
        "https://[2001:db8::1]:8443/hook",
        "https://hooks.example.com./x",
    ],
)
def test_public_destinations_are_allowed(url: str) -> None:
    assert check_url(url, DEFAULT) == url


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("https://127.0.0.1/", "DESTINATION_BLOCKED"),
        ("https://[fe80::1]/", "DESTINATION_BLOCKED"),
        ("https://[::ffff:10.0.0.1]/", "DESTINATION_BLOCKED"),
        ("https://127.1/", "DESTINATION_BLOCKED"),
        ("https://0x7f.1/", "DESTINATION_BLOCKED"),
        ("https://0177.0.0.1/", "INVALID_URL"),
        ("https://LOCALHOST/", "DESTINATION_BLOCKED"),
        ("https://localhost./", "DESTINATION_BLOCKED"),
        ("https://xn--localhost-/", "INVALID_URL"),
        ("https://hooks.example.com\\@127.0.0.1/", "INVALID_URL"),
        # Full-width "localhost": not a name httpx sends to.
        ("https://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/", "INVALID_URL"),
        ("mailto:ops@example.com", "INVALID_URL"),
    ],
)
def test_refused_destinations(url: str, code: str) -> None:
    with pytest.raises(ValidationFailed) as refused:
        check_url(url, DEFAULT)
    assert (refused.value.code, refused.value.field) == (code, "url")


def test_the_shared_alertmanager_is_never_a_destination(tmp_path: Path) -> None:
    settings = make_settings(
        "sqlite+aiosqlite:///:memory:",
        tmp_path,
        alerting_firewall_block_private=False,
        alertmanager_url="http://alertmanager.internal:9093",
    )
    firewall = firewall_from_settings(settings)
    with pytest.raises(ValidationFailed) as refused:
        check_url("http://alertmanager.internal:9093/-/reload", firewall)
    assert refused.value.code == "DESTINATION_BLOCKED"
    assert check_url("http://alertmanager.internal:9094/", firewall)


def resolving(monkeypatch: pytest.MonkeyPatch, **names: list[str]) -> None:
    """The resolver's answers for ``names`` (``_`` for ``.``): what DNS would say."""

    async def addresses_of(host: str, port: int) -> list[str]:
        return names[host.replace(".", "_")]

    monkeypatch.setattr(destination, "_addresses_of", addresses_of)


async def test_a_name_resolving_to_a_refused_address_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    resolving(monkeypatch, hooks_example_com=["203.0.113.7", "10.0.0.5"])
    url = "https://hooks.example.com/hook"
    assert check_url(url, DEFAULT) == url  # written, it was a name
    with pytest.raises(DestinationRefused) as refused:
        await resolve(url, DEFAULT)
    assert "resolves to 10.0.0.5" in str(refused.value)
    # An operator-blocked network is judged the same way.
    blocked = Firewall.of(block_private=True, block_cidrs=["203.0.113.0/24"])
    resolving(monkeypatch, hooks_example_com=["203.0.113.7"])
    with pytest.raises(DestinationRefused):
        await resolve(url, blocked)


async def test_the_request_goes_to_the_judged_address_with_the_name_as_host(
    monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    port = httpx.URL(receiver.url).port
    resolving(monkeypatch, hooks_example_test=["127.0.0.1"])
    [target] = await resolve(f"http://hooks.example.test:{port}/pinned?x=1", OPEN)
    assert str(target.url) == f"http://127.0.0.1:{port}/pinned?x=1"
    assert target.sni_hostname is None  # plain http
    async with httpx.AsyncClient(trust_env=False) as client:
        response = await client.send(target.request(client, {"x-test": "1"}, b"{}"))
    assert response.status_code == 200
    [request] = receiver.at("/pinned?x=1")
    assert request.headers["host"] == f"hooks.example.test:{port}"
    secure = await resolve("https://hooks.example.test/x", OPEN)
    assert [item.sni_hostname for item in secure] == ["hooks.example.test"]
    assert secure[0].host_header == "hooks.example.test"
