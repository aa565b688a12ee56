"""ALERTING_BACKEND=alertmanager: every tenant in one real Alertmanager, each confined to
alerts labelled with its own name."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.alerting import amtool
from tests.alerting.conftest import SharedAlertmanager
from tests.conftest import make_settings
from tests.factories import Factory, TenantFixture
from tests.fakes.alertmanager_reload import running_refusing_alertmanager
from tests.fakes.webhook import WebhookSink, running_webhook_sink
from tests.http_client import api_client, bearer, running_app

DELIVERY_TIMEOUT_SECONDS = 20.0


@pytest.fixture
def sink() -> Iterator[WebhookSink]:
    with running_webhook_sink() as webhook_sink:
        yield webhook_sink


async def configure(
    client: httpx.AsyncClient, tenant: TenantFixture, sink: WebhookSink, path: str
) -> None:
    headers = bearer(tenant.admin_key)
    hook = {"webhook_configs": [{"url": f"{sink.url}{path}", "send_resolved": False}]}
    response = await client.put(
        f"{tenant.path}/alerting/receivers/hook", json=hook, headers=headers
    )
    assert response.status_code == 201, response.text
    root = {
        "receiver": "hook",
        "group_by": ["alertname"],
        "group_wait": "0s",
        "group_interval": "1s",
    }
    response = await client.put(f"{tenant.path}/alerting/route", json=root, headers=headers)
    assert response.status_code == 200, response.text


async def fire(alertmanager: SharedAlertmanager, labels: dict[str, str]) -> None:
    alert = {"labels": labels, "startsAt": datetime.now(UTC).isoformat()}
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{alertmanager.url}/api/v2/alerts", json=[alert])
    assert response.status_code == 200, response.text


def alert_labels(bodies: list[dict[str, Any]]) -> list[dict[str, str]]:
    return [alert["labels"] for body in bodies for alert in body["alerts"]]


async def test_each_tenants_alerts_reach_only_its_own_receivers(
    shared_client: httpx.AsyncClient,
    shared_alertmanager: SharedAlertmanager,
    factory: Factory,
    sink: WebhookSink,
    unique: str,
) -> None:
    tenant_a = await factory.tenant(f"a-{unique}")
    tenant_b = await factory.tenant(f"b-{unique}")
    await configure(shared_client, tenant_a, sink, "/a")
    await configure(shared_client, tenant_b, sink, "/b")

    await fire(shared_alertmanager, {"alertname": "DiskFull", "tenant": tenant_a.name})
    delivered_a = await asyncio.to_thread(sink.wait_for, "/a", DELIVERY_TIMEOUT_SECONDS)
    assert delivered_a, "tenant A's webhook received nothing"
    assert delivered_a[0]["receiver"] == f"{tenant_a.name}/hook"
    assert alert_labels(delivered_a) == [{"alertname": "DiskFull", "tenant": tenant_a.name}]

    # An alert of tenant B, then one of a tenant without configuration: B gets only its own.
    await fire(shared_alertmanager, {"alertname": "CpuHigh", "tenant": tenant_b.name})
    await fire(shared_alertmanager, {"alertname": "Orphan", "tenant": f"c-{unique}"})
    delivered_b = await asyncio.to_thread(sink.wait_for, "/b", DELIVERY_TIMEOUT_SECONDS)
    assert alert_labels(delivered_b) == [{"alertname": "CpuHigh", "tenant": tenant_b.name}]
    assert all(label["tenant"] == tenant_a.name for label in alert_labels(sink.bodies("/a")))


async def test_the_written_file_confines_tenants_and_passes_amtool(
    shared_client: httpx.AsyncClient,
    shared_alertmanager: SharedAlertmanager,
    factory: Factory,
    sink: WebhookSink,
    unique: str,
) -> None:
    tenant = await factory.tenant(f"t-{unique}")
    await configure(shared_client, tenant, sink, "/t")
    headers = bearer(tenant.admin_key)
    await shared_client.put(
        f"{tenant.path}/alerting/global",
        json={"smtp_smarthost": "mail.example.com:25", "smtp_from": "am@example.com"},
        headers=headers,
    )
    await shared_client.put(
        f"{tenant.path}/alerting/receivers/mail",
        json={"email_configs": [{"to": "ops@example.com"}]},
        headers=headers,
    )
    await shared_client.put(
        f"{tenant.path}/alerting/routes/0",
        json={"receiver": "mail", "matchers": ['severity="page"']},
        headers=headers,
    )
    template = f'{{{{ define "{tenant.name}.title" }}}}x{{{{ end }}}}'
    created = await shared_client.put(
        f"{tenant.path}/alerting/templates/title.tmpl", json={"contents": template}, headers=headers
    )
    assert created.status_code == 201, created.text

    config = yaml.safe_load(shared_alertmanager.config_file.read_text())
    subtree = next(r for r in config["route"]["routes"] if r["receiver"] == f"{tenant.name}/hook")
    assert subtree["matchers"] == [f'tenant="{tenant.name}"']
    assert subtree["continue"] is False
    assert subtree["routes"] == [
        {"receiver": f"{tenant.name}/mail", "matchers": ['severity="page"']}
    ]
    mail = next(r for r in config["receivers"] if r["name"] == f"{tenant.name}/mail")
    # The tenant's global settings are inlined: the file's global section is nobody's.
    assert mail["email_configs"][0]["smarthost"] == "mail.example.com:25"
    template_file = (
        shared_alertmanager.config_file.parent / "templates" / f"{tenant.name}__title.tmpl"
    )
    assert template_file.read_text() == template
    checked = amtool.check([shared_alertmanager.config_file])
    assert checked[0].ok, checked[0].reason


async def test_template_names_must_carry_the_tenant_prefix(
    shared_client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    refused = await shared_client.put(
        f"{tenant.path}/alerting/templates/x.tmpl",
        json={"contents": '{{ define "slack.default.title" }}mine{{ end }}'},
        headers=bearer(tenant.admin_key),
    )
    assert refused.status_code == 400
    assert refused.json()["code"] == "TEMPLATE_NAME_NOT_NAMESPACED"
    assert refused.json()["field"] == "contents"


async def test_a_refused_reload_puts_the_previous_files_back(
    factory: Factory, database: object, database_url: str, tmp_path: Path
) -> None:
    tenant = await factory.tenant()
    config_file = tmp_path / "am" / "alertmanager.yml"
    with running_refusing_alertmanager(refusals=0) as alertmanager:
        settings = make_settings(
            database_url,
            tmp_path,
            alerting_backend="alertmanager",
            alertmanager_url=alertmanager.url,
            alertmanager_config_file=config_file,
        )
        async with running_app(settings) as app, api_client(app) as client:
            headers = bearer(tenant.admin_key)
            first = await client.put(
                f"{tenant.path}/alerting/templates/a.tmpl",
                json={"contents": f'{{{{ define "{tenant.name}.a" }}}}a{{{{ end }}}}'},
                headers=headers,
            )
            assert first.status_code == 201, first.text
            templates_before = sorted(p.name for p in (config_file.parent / "templates").iterdir())

            alertmanager.refusals = alertmanager.reloads + 1  # refuse the next reload only
            refused = await client.put(
                f"{tenant.path}/alerting/receivers/ops",
                json={"webhook_configs": [{"url": "https://hooks.example.com/"}]},
                headers=headers,
            )
            second = await client.delete(
                f"{tenant.path}/alerting/templates/a.tmpl", headers=headers
            )
            config = await client.get(f"{tenant.path}/alerting/config", headers=headers)

    assert refused.status_code == 400
    assert refused.json()["code"] == "ALERTING_BACKEND_REJECTED"
    assert "failed to reload config" in refused.json()["error"]
    # After the refusal the service keeps working with the previous configuration.
    assert second.status_code == 204
    assert config.headers["ETag"] == '"3"'
    assert [receiver["name"] for receiver in config.json()["receivers"]] == ["default"]
    assert templates_before == [f"{tenant.name}__a.tmpl"]
    assert list((config_file.parent / "templates").iterdir()) == []  # the delete went through


async def test_a_refused_reload_restores_the_exact_previous_file(
    factory: Factory, database: object, database_url: str, tmp_path: Path
) -> None:
    tenant = await factory.tenant()
    config_file = tmp_path / "am" / "alertmanager.yml"
    with running_refusing_alertmanager(refusals=0) as alertmanager:
        settings = make_settings(
            database_url,
            tmp_path,
            alerting_backend="alertmanager",
            alertmanager_url=alertmanager.url,
            alertmanager_config_file=config_file,
        )
        async with running_app(settings) as app, api_client(app) as client:
            headers = bearer(tenant.admin_key)
            await client.put(
                f"{tenant.path}/alerting/global", json={"resolve_timeout": "1m"}, headers=headers
            )
            before = config_file.read_text()
            reloads_before = alertmanager.reloads
            alertmanager.refusals = reloads_before + 1
            refused = await client.put(
                f"{tenant.path}/alerting/templates/b.tmpl",
                json={"contents": f'{{{{ define "{tenant.name}.b" }}}}b{{{{ end }}}}'},
                headers=headers,
            )
    assert refused.status_code == 400
    assert config_file.read_text() == before
    assert list((config_file.parent / "templates").iterdir()) == []
    assert alertmanager.reloads == reloads_before + 2  # the refused one, then the rollback


async def test_concurrent_writers_of_different_tenants_all_reach_the_file(
    shared_client: httpx.AsyncClient,
    shared_alertmanager: SharedAlertmanager,
    factory: Factory,
    unique: str,
) -> None:
    tenants = [await factory.tenant(f"c{index}-{unique}") for index in range(4)]

    async def write(tenant: TenantFixture) -> httpx.Response:
        return await shared_client.put(
            f"{tenant.path}/alerting/receivers/ops",
            json={"webhook_configs": [{"url": "https://hooks.example.com/"}]},
            headers=bearer(tenant.admin_key),
        )

    responses = await asyncio.gather(*(write(tenant) for tenant in tenants))
    assert [response.status_code for response in responses] == [201] * len(tenants)
    config = yaml.safe_load(shared_alertmanager.config_file.read_text())
    names = {receiver["name"] for receiver in config["receivers"]}
    assert {f"{tenant.name}/ops" for tenant in tenants} <= names
