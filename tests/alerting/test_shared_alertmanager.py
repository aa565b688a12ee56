"""ALERTING_BACKEND=alertmanager: every tenant in one real Alertmanager, each confined to
alerts labelled with its own name."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tenantplane.db.engine import Database
from tests.alerting import amtool
from tests.alerting.applied import applied, settled
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
    client: httpx.AsyncClient,
    database: Database,
    tenant: TenantFixture,
    sink: WebhookSink,
    path: str,
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
    await applied(database, tenant.name)


async def stored_template(
    client: httpx.AsyncClient, database: Database, tenant: TenantFixture, name: str, body: str
) -> str:
    """Store a template defining ``{tenant}.{name}``, wait until the backend has it, and
    return its contents."""
    contents = f'{{{{ define "{tenant.name}.{name}" }}}}{body}{{{{ end }}}}'
    created = await client.put(
        f"{tenant.path}/alerting/templates/{name}.tmpl",
        json={"contents": contents},
        headers=bearer(tenant.admin_key),
    )
    assert created.status_code == 201, created.text
    await applied(database, tenant.name)
    return contents


async def fire(alertmanager: SharedAlertmanager, labels: dict[str, str]) -> None:
    alert = {"labels": labels, "startsAt": datetime.now(UTC).isoformat()}
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{alertmanager.url}/api/v2/alerts", json=[alert])
    assert response.status_code == 200, response.text


def alert_labels(bodies: list[dict[str, Any]]) -> list[dict[str, str]]:
    return [alert["labels"] for body in bodies for alert in body["alerts"]]


async def test_each_tenants_alerts_reach_only_its_own_receivers(
    database: Database,
    loopback_shared_client: httpx.AsyncClient,
    shared_alertmanager: SharedAlertmanager,
    factory: Factory,
    sink: WebhookSink,
    unique: str,
) -> None:
    tenant_a = await factory.tenant(f"a-{unique}")
    tenant_b = await factory.tenant(f"b-{unique}")
    await configure(loopback_shared_client, database, tenant_a, sink, "/a")
    await configure(loopback_shared_client, database, tenant_b, sink, "/b")

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
    database: Database,
    loopback_shared_client: httpx.AsyncClient,
    shared_alertmanager: SharedAlertmanager,
    factory: Factory,
    sink: WebhookSink,
    unique: str,
) -> None:
    tenant = await factory.tenant(f"t-{unique}")
    await configure(loopback_shared_client, database, tenant, sink, "/t")
    headers = bearer(tenant.admin_key)
    await loopback_shared_client.put(
        f"{tenant.path}/alerting/global",
        json={"smtp_smarthost": "mail.example.com:25", "smtp_from": "am@example.com"},
        headers=headers,
    )
    await loopback_shared_client.put(
        f"{tenant.path}/alerting/receivers/mail",
        json={"email_configs": [{"to": "ops@example.com"}]},
        headers=headers,
    )
    await loopback_shared_client.put(
        f"{tenant.path}/alerting/routes/0",
        json={"receiver": "mail", "matchers": ['severity="page"']},
        headers=headers,
    )
    template = await stored_template(loopback_shared_client, database, tenant, "title", "x")

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
    factory: Factory, database: Database, database_url: str, tmp_path: Path
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
            await applied(database, tenant.name)
            templates_before = sorted(p.name for p in (config_file.parent / "templates").iterdir())
            file_before = config_file.read_text()

            alertmanager.refusals = alertmanager.reloads + 1  # refuse the next reload only
            stored = await client.put(
                f"{tenant.path}/alerting/receivers/ops",
                json={"webhook_configs": [{"url": "https://hooks.example.com/"}]},
                headers=headers,
            )
            refusal = await settled(database, tenant.name)
            # The refused render was rolled back: the files are the previous ones.
            file_after_refusal = config_file.read_text()
            templates_after_refusal = sorted(
                p.name for p in (config_file.parent / "templates").iterdir()
            )
            second = await client.delete(
                f"{tenant.path}/alerting/templates/a.tmpl", headers=headers
            )
            await applied(database, tenant.name)
            config = await client.get(f"{tenant.path}/alerting/config", headers=headers)

    assert stored.status_code == 201, stored.text  # validated and stored
    assert refusal[0] == "rejected"
    assert "failed to reload config" in refusal[1]
    assert file_after_refusal == file_before
    assert templates_after_refusal == templates_before == [f"{tenant.name}__a.tmpl"]
    # After the refusal the service keeps working: the next change is applied.
    assert second.status_code == 204
    assert config.headers["ETag"] == '"4"'
    assert [receiver["name"] for receiver in config.json()["receivers"]] == ["default", "ops"]
    assert list((config_file.parent / "templates").iterdir()) == []  # the delete went through
    assert "ops" in config_file.read_text()


async def test_a_refused_reload_restores_the_exact_previous_file(
    factory: Factory, database: Database, database_url: str, tmp_path: Path
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
            await applied(database, tenant.name)
            before = config_file.read_text()
            reloads_before = alertmanager.reloads
            alertmanager.refusals = reloads_before + 1
            stored = await client.put(
                f"{tenant.path}/alerting/templates/b.tmpl",
                json={"contents": f'{{{{ define "{tenant.name}.b" }}}}b{{{{ end }}}}'},
                headers=headers,
            )
            status, _ = await settled(database, tenant.name)
    assert stored.status_code == 201, stored.text
    assert status == "rejected"
    assert config_file.read_text() == before
    assert list((config_file.parent / "templates").iterdir()) == []
    assert alertmanager.reloads == reloads_before + 2  # the refused one, then the rollback


async def test_concurrent_writers_of_different_tenants_all_reach_the_file(
    database: Database,
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
    for tenant in tenants:
        await applied(database, tenant.name)
    config = yaml.safe_load(shared_alertmanager.config_file.read_text())
    names = {receiver["name"] for receiver in config["receivers"]}
    assert {f"{tenant.name}/ops" for tenant in tenants} <= names


async def test_reloads_share_one_connection_closed_at_shutdown(
    factory: Factory, database: Database, database_url: str, tmp_path: Path
) -> None:
    tenant = await factory.tenant()
    with running_refusing_alertmanager(refusals=0) as alertmanager:
        settings = make_settings(
            database_url,
            tmp_path,
            alerting_backend="alertmanager",
            alertmanager_url=alertmanager.url,
            alertmanager_config_file=tmp_path / "am" / "alertmanager.yml",
        )
        assert alertmanager.server is not None
        async with running_app(settings) as app, api_client(app) as client:
            for number in range(4):
                created = await client.put(
                    f"{tenant.path}/alerting/receivers/ops-{number}",
                    json={"webhook_configs": [{"url": "https://hooks.example.com/"}]},
                    headers=bearer(tenant.admin_key),
                )
                assert created.status_code == 201, created.text
                await applied(database, tenant.name)
            assert alertmanager.reloads == 4
            assert alertmanager.server.connections == 1
            assert alertmanager.server.open_connections == 1
        # The app's shutdown closed the pooled client and with it the connection.
        assert alertmanager.server.wait_until_closed()


async def test_a_tenant_cannot_invoke_another_tenants_templates(
    database: Database,
    shared_client: httpx.AsyncClient,
    shared_alertmanager: SharedAlertmanager,
    factory: Factory,
    unique: str,
) -> None:
    alpha = await factory.tenant(f"alpha-{unique}")
    beta = await factory.tenant(f"beta-{unique}")
    await stored_template(shared_client, database, beta, "secret", "beta-only")
    before = shared_alertmanager.config_file.read_text()
    call = f'{{{{ template "{beta.name}.secret" . }}}}'

    in_template = await shared_client.put(
        f"{alpha.path}/alerting/templates/steal.tmpl",
        json={"contents": f'{{{{ define "{alpha.name}.steal" }}}}{call}{{{{ end }}}}'},
        headers=bearer(alpha.admin_key),
    )
    slack = {"api_url": "https://hooks.slack.com/services/T/B/X", "title": call, "text": call}
    in_receiver = await shared_client.put(
        f"{alpha.path}/alerting/receivers/chat",
        json={"slack_configs": [slack]},
        headers=bearer(alpha.admin_key),
    )

    assert (in_template.status_code, in_template.json()["code"]) == (400, "UNKNOWN_TEMPLATE")
    assert in_template.json()["field"] == "contents"
    assert (in_receiver.status_code, in_receiver.json()["code"]) == (400, "UNKNOWN_TEMPLATE")
    assert in_receiver.json()["field"] in ("slack_configs[0].title", "slack_configs[0].text")
    assert shared_alertmanager.config_file.read_text() == before
    # Beta itself may invoke it, and built-in templates stay open to everyone.
    slack["title"] = call
    slack["text"] = '{{ template "slack.default.text" . }}'
    own = await shared_client.put(
        f"{beta.path}/alerting/receivers/chat",
        json={"slack_configs": [slack]},
        headers=bearer(beta.admin_key),
    )
    assert own.status_code == 201, own.text
    await applied(database, beta.name)
    assert amtool.check([shared_alertmanager.config_file])[0].ok


async def test_an_exponential_template_never_reaches_the_shared_alertmanager(
    shared_client: httpx.AsyncClient,
    shared_alertmanager: SharedAlertmanager,
    factory: Factory,
    unique: str,
) -> None:
    tenant = await factory.tenant(f"t-{unique}")
    lines = [f'{{{{ define "{tenant.name}.l0" }}}}x{{{{ end }}}}']
    for level in range(1, 60):
        below = f'{{{{ template "{tenant.name}.l{level - 1}" . }}}}'
        lines.append(f'{{{{ define "{tenant.name}.l{level}" }}}}{below}{below}{{{{ end }}}}')
    before = shared_alertmanager.config_file.read_text()
    response = await shared_client.put(
        f"{tenant.path}/alerting/templates/bomb.tmpl",
        json={"contents": "\n".join(lines)},
        headers=bearer(tenant.admin_key),
    )
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "TEMPLATE_TOO_COSTLY"
    assert shared_alertmanager.config_file.read_text() == before
    template_dir = shared_alertmanager.config_file.parent / "templates"
    assert not (template_dir / f"{tenant.name}__bomb.tmpl").exists()


async def test_the_rendered_files_are_readable_by_their_owner_only(
    loopback_shared_client: httpx.AsyncClient,
    shared_alertmanager: SharedAlertmanager,
    factory: Factory,
    sink: WebhookSink,
    unique: str,
    database: Database,
) -> None:
    """The file holds every tenant's receiver credentials: mode 0600, whatever the umask."""
    tenant = await factory.tenant(f"t-{unique}")
    await configure(loopback_shared_client, database, tenant, sink, "/t")
    await stored_template(loopback_shared_client, database, tenant, "body", "x")
    template_file = (
        shared_alertmanager.config_file.parent / "templates" / f"{tenant.name}__body.tmpl"
    )
    for written in (shared_alertmanager.config_file, template_file):
        assert stat.S_IMODE(os.stat(written).st_mode) == 0o600, written
