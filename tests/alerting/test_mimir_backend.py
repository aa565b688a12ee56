"""ALERTING_BACKEND=mimir against a loopback fake of Mimir's Alertmanager configuration API."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import yaml

from tenantplane.db.engine import Database
from tests.alerting import amtool
from tests.alerting.applied import applied, settled, unavailable
from tests.conftest import make_settings
from tests.factories import Factory
from tests.fakes.mimir import FakeMimir
from tests.http_client import api_client, bearer, running_app

HOOK = {"webhook_configs": [{"url": "https://hooks.example.com/ops"}]}


async def test_without_credentials_the_tenant_waits(
    mimir_client: httpx.AsyncClient, factory: Factory, fake_mimir: FakeMimir
) -> None:
    tenant = await factory.tenant()
    for response in (
        await mimir_client.get(
            f"{tenant.path}/alerting/config", headers=bearer(tenant.readonly_key)
        ),
        await mimir_client.put(
            f"{tenant.path}/alerting/receivers/ops", json=HOOK, headers=bearer(tenant.admin_key)
        ),
    ):
        assert response.status_code == 503
        assert response.json()["code"] == "TENANT_CREDENTIALS_PENDING"
        assert int(response.headers["Retry-After"]) > 0
    assert fake_mimir.requests == []


async def test_writes_post_the_whole_configuration_with_basic_auth(
    mimir_client: httpx.AsyncClient,
    factory: Factory,
    fake_mimir: FakeMimir,
    tmp_path: Path,
    database: Database,
) -> None:
    tenant = await factory.tenant()
    await factory.alerting_credentials(tenant.name, org_id="org-17")
    fake_mimir.expect_basic("org-17", "mimir-user", "mimir-password")
    template = '{{ define "ops.title" }}{{ .CommonLabels.alertname }}{{ end }}'

    created = await mimir_client.put(
        f"{tenant.path}/alerting/receivers/ops", json=HOOK, headers=bearer(tenant.admin_key)
    )
    assert created.status_code == 201, created.text
    routed = await mimir_client.put(
        f"{tenant.path}/alerting/routes/0",
        json={"receiver": "ops", "matchers": ['severity="page"']},
        headers=bearer(tenant.admin_key),
    )
    assert routed.status_code == 201, routed.text
    templated = await mimir_client.put(
        f"{tenant.path}/alerting/templates/ops.tmpl",
        json={"contents": template},
        headers=bearer(tenant.admin_key),
    )
    assert templated.status_code == 201, templated.text
    await applied(database, tenant.name)

    # Applied after each commit (writes in quick succession may be applied together).
    posts = [request for request in fake_mimir.requests if request.method == "POST"]
    assert 1 <= len(posts) <= 3
    assert {request.headers["X-Scope-OrgID"] for request in posts} == {"org-17"}
    assert posts[-1].headers["Content-Type"] == "application/yaml"
    stored = fake_mimir.configs["org-17"]
    assert stored["template_files"] == {"ops.tmpl": template}
    config = yaml.safe_load(stored["alertmanager_config"])
    assert config["templates"] == ["ops.tmpl"]
    assert config["route"] == {
        "receiver": "default",
        "routes": [{"receiver": "ops", "matchers": ['severity="page"']}],
    }
    assert [receiver["name"] for receiver in config["receivers"]] == ["default", "ops"]

    # What the API serves is what Mimir holds, and it passes amtool as Mimir's loader would.
    wrapper = await mimir_client.get(
        f"{tenant.path}/alerting/config", headers=bearer(tenant.admin_key)
    )
    assert wrapper.status_code == 200
    assert wrapper.json()["templates"] == {"ops.tmpl": template}
    (verdict,) = amtool.check_documents([wrapper.json()], tmp_path)
    assert verdict.ok, verdict.reason


async def test_bearer_credentials_and_reset_deletes_the_configuration(
    mimir_client: httpx.AsyncClient, factory: Factory, fake_mimir: FakeMimir, database: Database
) -> None:
    tenant = await factory.tenant()
    await factory.alerting_credentials(tenant.name, auth="bearer", username=None, secret="tok")
    fake_mimir.expect_bearer(tenant.name, "tok")
    response = await mimir_client.put(
        f"{tenant.path}/alerting/global",
        json={"resolve_timeout": "2m"},
        headers=bearer(tenant.admin_key),
    )
    assert response.status_code == 200, response.text
    await applied(database, tenant.name)
    assert fake_mimir.requests[-1].headers["Authorization"] == "Bearer tok"
    assert tenant.name in fake_mimir.configs

    reset = await mimir_client.delete(
        f"{tenant.path}/alerting/config", headers=bearer(tenant.admin_key)
    )
    assert reset.status_code == 200
    await applied(database, tenant.name)
    assert fake_mimir.requests[-1].method == "DELETE"
    assert tenant.name not in fake_mimir.configs
    assert reset.json()["global"] == {}


async def test_a_mimir_refusal_is_recorded_and_mimir_keeps_its_configuration(
    mimir_client: httpx.AsyncClient, factory: Factory, fake_mimir: FakeMimir, database: Database
) -> None:
    tenant = await factory.tenant()
    await factory.alerting_credentials(tenant.name)
    first = await mimir_client.put(
        f"{tenant.path}/alerting/receivers/ops", json=HOOK, headers=bearer(tenant.admin_key)
    )
    assert first.status_code == 201, first.text
    await applied(database, tenant.name)
    held = fake_mimir.configs[tenant.name]

    fake_mimir.max_config_size = 400  # Mimir's -alertmanager.max-config-size-bytes
    big = {"webhook_configs": [{"url": f"https://hooks.example.com/{'x' * 500}"}]}
    stored = await mimir_client.put(
        f"{tenant.path}/alerting/receivers/big", json=big, headers=bearer(tenant.admin_key)
    )
    # Validated and stored: the answer does not wait for Mimir.
    assert stored.status_code == 201, stored.text
    status, error = await settled(database, tenant.name)
    assert status == "rejected"
    assert "too big" in error
    assert fake_mimir.configs[tenant.name] == held  # Mimir keeps what it had

    # The tenant shrinks the configuration: the next write is applied.
    fake_mimir.max_config_size = 0
    removed = await mimir_client.delete(
        f"{tenant.path}/alerting/receivers/big", headers=bearer(tenant.admin_key)
    )
    assert removed.status_code == 204, removed.text
    await applied(database, tenant.name)


async def test_an_unavailable_mimir_does_not_hold_up_writes_and_is_retried(
    mimir_client: httpx.AsyncClient, factory: Factory, fake_mimir: FakeMimir, database: Database
) -> None:
    tenant = await factory.tenant()
    await factory.alerting_credentials(tenant.name)
    read = await mimir_client.get(
        f"{tenant.path}/alerting/config", headers=bearer(tenant.admin_key)
    )
    assert read.status_code == 200
    fake_mimir.storage_failing = True
    written = await mimir_client.put(
        f"{tenant.path}/alerting/receivers/ops", json=HOOK, headers=bearer(tenant.admin_key)
    )
    assert written.status_code == 201, written.text
    _, error = await settled(database, tenant.name, unavailable)
    assert error
    assert tenant.name not in fake_mimir.configs
    fake_mimir.storage_failing = False
    # Retried with backoff (the first retry after 5 s) until Mimir stores it.
    await applied(database, tenant.name)
    config = yaml.safe_load(fake_mimir.configs[tenant.name]["alertmanager_config"])
    assert [receiver["name"] for receiver in config["receivers"]] == ["default", "ops"]


async def test_wrong_credentials_and_unreachable_mimir_are_unavailable(
    mimir_client: httpx.AsyncClient,
    factory: Factory,
    fake_mimir: FakeMimir,
    database_url: str,
    tmp_path: Path,
    database: Database,
) -> None:
    tenant = await factory.tenant()
    await factory.alerting_credentials(tenant.name, secret="wrong")
    fake_mimir.expect_basic(tenant.name, "mimir-user", "right")
    # A tenant new to this service: its first write asks Mimir what it holds, at once.
    response = await mimir_client.put(
        f"{tenant.path}/alerting/receivers/ops", json=HOOK, headers=bearer(tenant.admin_key)
    )
    assert response.status_code == 503
    assert response.json()["code"] == "ALERTING_BACKEND_UNAVAILABLE"

    closed = make_settings(
        database_url, tmp_path, alerting_backend="mimir", mimir_url="http://127.0.0.1:9"
    )
    async with running_app(closed) as app, api_client(app) as client:
        down = await client.put(
            f"{tenant.path}/alerting/receivers/ops", json=HOOK, headers=bearer(tenant.admin_key)
        )
    assert down.status_code == 503
    assert down.json()["code"] == "ALERTING_BACKEND_UNAVAILABLE"


async def test_disabled_backend_answers_503(
    factory: Factory, database_url: str, tmp_path: Path, database: object
) -> None:
    tenant = await factory.tenant()
    settings = make_settings(database_url, tmp_path, alerting_backend="disabled")
    async with running_app(settings) as app, api_client(app) as client:
        read = await client.get(f"{tenant.path}/alerting/config", headers=bearer(tenant.admin_key))
        write = await client.put(
            f"{tenant.path}/alerting/receivers/ops", json=HOOK, headers=bearer(tenant.admin_key)
        )
        stranger = await client.get(f"{tenant.path}/alerting/config")
    for response in (read, write):
        assert response.status_code == 503
        assert response.json()["code"] == "ALERTING_DISABLED"
    assert stranger.status_code == 401  # authentication comes first


async def test_an_existing_mimir_configuration_is_adopted_on_first_use(
    mimir_client: httpx.AsyncClient, factory: Factory, fake_mimir: FakeMimir, database: Database
) -> None:
    tenant = await factory.tenant()
    await factory.alerting_credentials(tenant.name)
    existing = {
        "route": {"receiver": "team", "group_by": ["alertname"]},
        "receivers": [{"name": "team", "webhook_configs": [{"url": "https://old.example.com/"}]}],
        "templates": ["t.tmpl"],
    }
    fake_mimir.configs[tenant.name] = {
        "template_files": {"t.tmpl": '{{ define "x" }}x{{ end }}'},
        "alertmanager_config": yaml.safe_dump(existing),
    }
    read = await mimir_client.get(
        f"{tenant.path}/alerting/config", headers=bearer(tenant.readonly_key)
    )
    assert read.status_code == 200
    assert read.headers["ETag"] == '"1"'
    assert read.json()["route"] == existing["route"]
    assert read.json()["templates"] == {"t.tmpl": '{{ define "x" }}x{{ end }}'}

    added = await mimir_client.put(
        f"{tenant.path}/alerting/receivers/ops",
        json=HOOK,
        headers={**bearer(tenant.admin_key), "If-Match": '"1"'},
    )
    assert added.status_code == 201, added.text
    await applied(database, tenant.name)
    config = yaml.safe_load(fake_mimir.configs[tenant.name]["alertmanager_config"])
    assert [receiver["name"] for receiver in config["receivers"]] == ["team", "ops"]
    assert config["route"] == existing["route"]


async def test_a_configuration_the_api_cannot_represent_is_not_adopted(
    mimir_client: httpx.AsyncClient, factory: Factory, fake_mimir: FakeMimir, database: Database
) -> None:
    tenant = await factory.tenant()
    await factory.alerting_credentials(tenant.name)
    fake_mimir.configs[tenant.name] = {
        "template_files": {},
        "alertmanager_config": yaml.safe_dump(
            {"route": {"receiver": "a"}, "receivers": [{"name": "a"}], "inhibit_rules": []}
        ),
    }
    read = await mimir_client.get(
        f"{tenant.path}/alerting/config", headers=bearer(tenant.readonly_key)
    )
    assert read.json()["receivers"] == [{"name": "default"}]
    # A reset still deletes what Mimir holds, though the stored document did not change.
    reset = await mimir_client.delete(
        f"{tenant.path}/alerting/config", headers=bearer(tenant.admin_key)
    )
    assert reset.status_code == 200
    await applied(database, tenant.name)
    assert tenant.name not in fake_mimir.configs


def test_the_app_refuses_to_start_without_the_backend_url(tmp_path: Path) -> None:
    from tenantplane.app import create_app

    for backend, setting in (("mimir", "MIMIR_URL"), ("alertmanager", "ALERTMANAGER_URL")):
        settings = make_settings(
            f"sqlite+aiosqlite:///{tmp_path / 'x.db'}", tmp_path, alerting_backend=backend
        )
        with pytest.raises(ValueError, match=setting):
            create_app(settings)


async def test_calls_to_mimir_share_one_connection_closed_at_shutdown(
    factory: Factory,
    fake_mimir: FakeMimir,
    database_url: str,
    tmp_path: Path,
    database: Database,
) -> None:
    tenant = await factory.tenant()
    await factory.alerting_credentials(tenant.name)
    settings = make_settings(
        database_url, tmp_path, alerting_backend="mimir", mimir_url=fake_mimir.url
    )
    assert fake_mimir.server is not None
    async with running_app(settings) as app, api_client(app) as client:
        for number in range(4):
            created = await client.put(
                f"{tenant.path}/alerting/receivers/ops-{number}",
                json=HOOK,
                headers=bearer(tenant.admin_key),
            )
            assert created.status_code == 201, created.text
            await applied(database, tenant.name)
        methods = [request.method for request in fake_mimir.requests]
        assert methods == ["GET"] + ["POST"] * 4
        # The API (GET) and the process's reconcilers (POST) share one client.
        assert fake_mimir.server.connections == 1
        assert fake_mimir.server.open_connections == 1
    # The app's shutdown closed the pooled client and with it the connection.
    assert fake_mimir.server.wait_until_closed()
