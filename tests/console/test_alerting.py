"""The alerting pages: parts edited as YAML documents, the API's validation errors beside
the textarea with the typed text kept, routes listed in order and moved under the wrapper
ETag (412 shown as "changed meanwhile"), readonly viewers without controls, and the states
in which the API cannot serve alerting (not enabled, credentials pending)."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

from tenantplane.member.models import Role
from tests.conftest import make_settings
from tests.console.session import console_session
from tests.factories import Factory, TenantFixture
from tests.http_client import bearer, running_app

WEBHOOK = "webhook_configs:\n  - url: https://hooks.example.com/alerts\n    send_resolved: true\n"
ETAG_FIELD = re.compile(r'name="etag" value="([^"]*)"')


def etag_on(page: httpx.Response) -> str:
    found = ETAG_FIELD.search(page.text)
    assert found is not None, "the page carries no ETag"
    return html.unescape(found.group(1))


def document_error(page: httpx.Response) -> str:
    found = re.search(r'<p class="field-error" id="f-document-error">(.+?)</p>', page.text)
    assert found is not None, page.text
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1)))


def textarea(page: httpx.Response) -> str:
    found = re.search(r'<textarea id="f-document"[^>]*>\n(.*?)</textarea>', page.text, re.S)
    assert found is not None
    return html.unescape(found.group(1))


async def api_routes(client: httpx.AsyncClient, tenant: TenantFixture) -> list[dict[str, Any]]:
    """The child routes as the API holds them."""
    listed = await client.get(f"{tenant.path}/alerting/routes", headers=bearer(tenant.admin_key))
    assert listed.status_code == 200
    items: list[dict[str, Any]] = listed.json()["items"]
    return items


async def teams(client: httpx.AsyncClient, tenant: TenantFixture) -> list[str]:
    return [route["match"]["team"] for route in await api_routes(client, tenant)]


async def test_an_admin_adds_a_receiver_and_routes_and_sees_them_listed_in_order(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        new = await console.get("alerting/receivers/-/new")
        assert "webhook_configs" in textarea(new)  # the example to start from
        created = await console.post("alerting/receivers", {"name": "ops", "document": WEBHOOK})
        assert created.status_code == 303, created.text
        again = await console.post("alerting/receivers", {"name": "ops", "document": "{}"})
        assert again.status_code == 409
        assert "exists already" in again.text

        receivers = await console.get("alerting/receivers")
        assert re.findall(r'data-item="([^"]+)"', receivers.text) == ["default", "ops"]
        assert "webhook" in receivers.text
        edit = await console.get("alerting/receivers/ops")
        assert "https://hooks.example.com/alerts" in textarea(edit)

        for document in ('receiver: ops\nmatchers: [severity="critical"]\n', "match: {team: db}\n"):
            added = await console.post("alerting/routes", {"document": document})
            assert added.status_code == 303, added.text

        routes = await console.get("alerting/routes")
        rows = re.findall(r'<tr data-route="(\d)">(.*?)</tr>', routes.text, re.S)
        assert [index for index, _ in rows] == ["0", "1"]
        assert "ops" in rows[0][1]
        assert "severity=&#34;critical&#34;" in rows[0][1]
        assert "the root route's" in rows[1][1]
        assert "team=&#34;db&#34;" in rows[1][1]

        overview = await console.get("alerting")
        assert 'data-count="receivers">2<' in overview.text
        assert 'data-count="routes">2<' in overview.text
    assert await api_routes(client, tenant) == [
        {"receiver": "ops", "matchers": ['severity="critical"']},
        {"match": {"team": "db"}},
    ]


async def test_the_apis_validation_error_is_beside_the_textarea_with_the_text_kept(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    typed = "webhook_configs:\n  - url: not a url\n"
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        refused = await console.post("alerting/receivers", {"name": "ops", "document": typed})
        assert refused.status_code == 400
        assert document_error(refused).startswith("webhook_configs[0].url: ")
        assert 'aria-invalid="true"' in refused.text
        assert textarea(refused) == typed
        assert 'value="ops"' in refused.text  # the name typed is kept too

        broken = "webhook_configs:\n  - url: [unclosed\n"
        not_yaml = await console.post("alerting/receivers", {"name": "ops", "document": broken})
        assert not_yaml.status_code == 400
        assert "line 3" in document_error(not_yaml)
        assert "not valid YAML" in document_error(not_yaml)
        assert textarea(not_yaml) == broken

        bad_name = await console.post("alerting/receivers", {"name": "a?b", "document": WEBHOOK})
        assert bad_name.status_code == 400
        assert re.search(r'id="f-name-error">invalid receiver name', bad_name.text)

        template = await console.post(
            "alerting/templates", {"filename": "t.tmpl", "document": "{{ define }}"}
        )
        assert template.status_code == 400
        assert document_error(template).startswith("contents: ")
        assert textarea(template) == "{{ define }}"
    listed = await client.get(f"{tenant.path}/alerting/receivers", headers=bearer(tenant.admin_key))
    assert [item["name"] for item in listed.json()["items"]] == ["default"]


async def test_moving_a_route_swaps_it_and_a_stale_page_is_told_to_reload(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        for team in ("a", "b", "c"):
            added = await console.post("alerting/routes", {"document": f"match: {{team: {team}}}"})
            assert added.status_code == 303
        listed = await console.get("alerting/routes")
        etag = etag_on(listed)
        moved = await console.post("alerting/routes/0/move", {"direction": "down", "etag": etag})
        assert moved.status_code == 303, moved.text
        assert await teams(client, tenant) == ["b", "a", "c"]
        stale = await console.post("alerting/routes/2/move", {"direction": "up", "etag": etag})
        assert stale.status_code == 412
        assert "changed meanwhile" in stale.text
        assert "Reload" in stale.text
        assert await teams(client, tenant) == ["b", "a", "c"]
        edge = await console.post(
            "alerting/routes/0/move", {"direction": "up", "etag": etag_on(stale)}
        )
        assert edge.status_code == 400


async def test_a_readonly_member_sees_no_write_controls_and_a_forged_write_is_refused(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await client.put(
        f"{tenant.path}/alerting/receivers/ops",
        json={"webhook_configs": [{"url": "https://hooks.example.com/token"}]},
        headers=bearer(tenant.admin_key),
    )
    for index, name in enumerate(("ops", "default")):
        await client.put(
            f"{tenant.path}/alerting/routes/{index}",
            json={"receiver": name},
            headers=bearer(tenant.admin_key),
        )
    await factory.member(tenant.id, "viewer@example.com", Role.readonly)
    async with console_session(app, tenant.name, "viewer@example.com") as console:
        for path in ("alerting", "alerting/receivers", "alerting/routes", "alerting/global"):
            page = await console.get(path)
            assert page.status_code == 200
            assert "<textarea" not in page.text
            assert 'name="etag"' not in page.text
            assert "Add receiver" not in page.text
            assert "Add route" not in page.text
        receiver = await console.get("alerting/receivers/ops")
        assert "&lt;secret&gt;" in receiver.text  # the API's redaction, as readonly reads it
        assert "<textarea" not in receiver.text
        assert "hooks.example.com/token" not in receiver.text

        forged = await console.post("alerting/receivers", {"name": "x", "document": WEBHOOK})
        assert forged.status_code == 403
        assert "admin access required" in forged.text
        forged_move = await console.post("alerting/routes/0/move", {"direction": "down"})
        assert forged_move.status_code == 403
        forged_delete = await console.post("alerting/receivers/ops/delete")
        assert forged_delete.status_code == 403
    listed = await client.get(f"{tenant.path}/alerting/receivers", headers=bearer(tenant.admin_key))
    assert [item["name"] for item in listed.json()["items"]] == ["default", "ops"]
    assert await api_routes(client, tenant) == [{"receiver": "ops"}, {"receiver": "default"}]


async def test_alerting_not_enabled_and_credentials_pending_are_explained(
    factory: Factory, database_url: str, tmp_path: Path, database: object
) -> None:
    tenant = await factory.tenant()
    disabled = make_settings(database_url, tmp_path, alerting_backend="disabled")
    async with (
        running_app(disabled) as app,
        console_session(app, tenant.name, tenant.admin_email) as console,
    ):
        overview = await console.get("alerting")
        assert overview.status_code == 503
        assert "Alerting is not enabled in this deployment" in overview.text
        assert "the alerting proxy is not enabled in this deployment" in overview.text
        receivers = await console.get("alerting/receivers")
        assert receivers.status_code == 503
        assert "ALERTING_DISABLED" in receivers.text
    # Mimir without the tenant's credentials: refused before Mimir is ever called.
    pending = make_settings(
        database_url, tmp_path, alerting_backend="mimir", mimir_url="http://127.0.0.1:9"
    )
    async with (
        running_app(pending) as app,
        console_session(app, tenant.name, tenant.admin_email) as console,
    ):
        overview = await console.get("alerting")
        assert overview.status_code == 503
        assert "not set its credentials" in overview.text
        assert "credentials are not yet available" in overview.text
        assert "retry after 60 seconds" in overview.text
