"""Redirects are never followed: Alertmanager's HTTP clients follow them by default
(`follow_redirects: true`), and a public receiver answering 307 to 127.0.0.1 would lead them
past the receivers firewall (issue 35, finding 3)."""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import yaml

from tenantplane.db.engine import Database
from tenantplane.providers.alerting.render import shared_config, tenant_yaml
from tests.alerting.applied import applied
from tests.alerting.conftest import SharedAlertmanager
from tests.alerting.corpus import EVERY_FIELD_YAML
from tests.factories import Factory
from tests.fakes.server import LoopbackServer, QuietHandler, serving
from tests.http_client import bearer

HOOK = "https://hooks.example.com/x"
OFF = {"follow_redirects": False}
# Every place an HTTP client is configured: (body, the field path of follow_redirects).
HTTP_CONFIGS: list[tuple[str, dict[str, Any], str]] = [
    (
        "global",
        {"global": {"http_config": {"follow_redirects": True}}},
        "global.http_config.follow_redirects",
    ),
    *(
        (
            key,
            {
                "receivers": [
                    {"name": "default"},
                    {
                        "name": "r",
                        key: [{**config, "http_config": {"follow_redirects": True, **extra}}],
                    },
                ]
            },
            f"receivers[1].{key}[0].http_config.follow_redirects",
        )
        for key, config, extra in (
            ("webhook_configs", {"url": HOOK}, {}),
            ("slack_configs", {"api_url": HOOK}, {}),
            ("pagerduty_configs", {"routing_key": "k"}, {}),
            ("opsgenie_configs", {"api_key": "k"}, {}),
            ("discord_configs", {"webhook_url": HOOK}, {}),
            ("telegram_configs", {"bot_token": "t", "chat_id": 1}, {}),
            ("pushover_configs", {"user_key": "u", "token": "t"}, {}),
            ("victorops_configs", {"api_key": "k", "routing_key": "r"}, {}),
            ("webex_configs", {"room_id": "r"}, {"bearer_token": "t"}),
        )
    ),
]


def _config(body: dict[str, Any]) -> dict[str, Any]:
    route: dict[str, Any] = {"receiver": "default"}
    if len(body.get("receivers", [])) > 1:
        route["routes"] = [{"receiver": "r"}]
    return {"receivers": [{"name": "default"}], "route": route, **body}


@pytest.mark.parametrize(("name", "body", "field"), HTTP_CONFIGS, ids=[c[0] for c in HTTP_CONFIGS])
async def test_tenants_cannot_turn_redirects_on(
    client: httpx.AsyncClient, factory: Factory, name: str, body: dict[str, Any], field: str
) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    before = await client.get(f"{tenant.path}/alerting/config", headers=headers)
    refused = await client.put(
        f"{tenant.path}/alerting/config", json=_config(body), headers=headers
    )
    assert refused.status_code == 400, refused.text
    assert (refused.json()["code"], refused.json()["field"]) == ("REDIRECTS_NOT_ALLOWED", field)
    after = await client.get(f"{tenant.path}/alerting/config", headers=headers)
    assert (after.headers["ETag"], after.json()) == (before.headers["ETag"], before.json())
    allowed = copy.deepcopy(body)
    text = yaml.safe_dump(allowed).replace("follow_redirects: true", "follow_redirects: false")
    accepted = await client.put(
        f"{tenant.path}/alerting/config", json=_config(yaml.safe_load(text)), headers=headers
    )
    assert accepted.status_code == 200, accepted.text


def _http_clients(config: dict[str, Any]) -> list[tuple[str, Any]]:
    """(integration, the http_config it uses: its own, or else the global one it inherits)
    of every integration that speaks HTTP."""
    inherited = config["global"]["http_config"]
    return [
        (f"{receiver['name']}.{key}", integration.get("http_config", inherited))
        for receiver in config["receivers"]
        for key, integrations in receiver.items()
        if key not in ("name", "email_configs")
        for integration in integrations
    ]


def test_every_rendered_http_client_refuses_redirects() -> None:
    """Documents stored before the rule (redirects on, or left to the default) are rendered
    with redirects off on every integration, for Mimir and for the shared Alertmanager."""
    loaded = yaml.safe_load(EVERY_FIELD_YAML)
    loaded["global"]["http_config"]["follow_redirects"] = True
    webhook = {"url": HOOK, "http_config": {"follow_redirects": True, "bearer_token": "t"}}
    loaded["receivers"].append({"name": "b", "webhook_configs": [webhook, {"url": HOOK}]})
    document = {
        "global": loaded["global"],
        "receivers": loaded["receivers"],
        "route": loaded["route"],
        "templates": {},
        "time_intervals": [],
    }
    for config in (yaml.safe_load(tenant_yaml(document)), shared_config({"t": document}, "d")):
        clients = _http_clients(config)
        assert len(clients) >= 8
        for name, http_config in clients:
            assert http_config is not None, name
            assert http_config["follow_redirects"] is False, name
    # The other settings are kept, and a tenant's global ones still reach its integrations.
    own = yaml.safe_load(tenant_yaml(document))
    assert own["global"]["http_config"] == {**loaded["global"]["http_config"], **OFF}
    hooks = next(r for r in own["receivers"] if r["name"] == "b")["webhook_configs"]
    assert hooks[0]["http_config"] == {"follow_redirects": False, "bearer_token": "t"}
    assert "http_config" not in hooks[1]  # inherits the global one, as written
    shared = shared_config({"t": document}, "d")
    hooks = next(r for r in shared["receivers"] if r["name"] == "t/b")["webhook_configs"]
    assert hooks[1]["http_config"] == {**loaded["global"]["http_config"], **OFF}
    empty = {**document, "global": {}}
    for config in (yaml.safe_load(tenant_yaml(empty)), shared_config({"t": empty}, "d")):
        assert config["global"]["http_config"] == OFF


class Redirects:
    def __init__(self) -> None:
        self.paths: list[str] = []
        self.lock = threading.Lock()

    def seen(self, path: str) -> bool:
        with self.lock:
            return path in self.paths


@pytest.fixture
def redirecting() -> Iterator[tuple[LoopbackServer, Redirects]]:
    """Answers /away with 307 to /target (and everything else with 200), recording paths."""
    record = Redirects()

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with record.lock:
                record.paths.append(self.path)
            self.send_response(307 if self.path == "/away" else 200)
            if self.path == "/away":
                self.send_header("Location", "/target")
            self.send_header("Content-Length", "0")
            self.end_headers()

    with serving(Handler) as server:
        yield server, record


async def test_the_real_alertmanager_does_not_follow_a_receivers_redirect(
    database: Database,
    loopback_shared_client: httpx.AsyncClient,
    shared_alertmanager: SharedAlertmanager,
    redirecting: tuple[LoopbackServer, Redirects],
    factory: Factory,
    unique: str,
) -> None:
    server, record = redirecting
    tenant = await factory.tenant(f"r-{unique}")
    headers = bearer(tenant.admin_key)
    hook = {"webhook_configs": [{"url": f"{server.url}/away", "send_resolved": False}]}
    stored = await loopback_shared_client.put(
        f"{tenant.path}/alerting/receivers/hook", json=hook, headers=headers
    )
    assert stored.status_code == 201, stored.text
    root = {"receiver": "hook", "group_wait": "0s"}
    routed = await loopback_shared_client.put(
        f"{tenant.path}/alerting/route", json=root, headers=headers
    )
    assert routed.status_code == 200, routed.text
    await applied(database, tenant.name)
    labels = {"alertname": unique, "tenant": tenant.name}
    alert = {"labels": labels, "startsAt": datetime.now(UTC).isoformat()}
    async with httpx.AsyncClient() as client:
        fired = await client.post(f"{shared_alertmanager.url}/api/v2/alerts", json=[alert])
    assert fired.status_code == 200, fired.text
    for _ in range(200):
        if record.seen("/away"):
            break
        await asyncio.sleep(0.1)
    assert record.seen("/away"), record.paths
    await asyncio.sleep(2)  # time enough to follow, had it been allowed
    assert not record.seen("/target"), record.paths
