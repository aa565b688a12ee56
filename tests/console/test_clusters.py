"""The clusters pages: list (live rows), create with the API's errors at their fields,
detail, upgrade, resize, kubeconfig and a typed delete; readonly viewers get no controls."""

from __future__ import annotations

import re

import httpx
import yaml
from fastapi import FastAPI

from tenantplane.member.models import Role
from tests.cluster.polling import wait_running
from tests.console.session import console_session
from tests.factories import Factory


async def test_an_admin_creates_a_cluster_and_sees_it_listed(
    app: FastAPI, factory: Factory
) -> None:
    tenant = await factory.tenant()
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        empty = await console.get("clusters")
        assert "No clusters yet" in empty.text
        created = await console.post("clusters", {"name": "web", "version": ""})
        assert created.status_code == 303
        assert created.headers["location"].startswith(console.url("clusters/web"))
        rows = await console.get("clusters/-/rows")
        assert 'data-cluster="web"' in rows.text
        detail = await console.get("clusters/web")
        assert detail.status_code == 200
        assert "Delete cluster" in detail.text


async def test_the_apis_refusal_is_shown_at_its_field(app: FastAPI, factory: Factory) -> None:
    tenant = await factory.tenant()
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        refused = await console.post("clusters", {"name": "Not A Name"})
        assert refused.status_code == 400
        error = re.search(r'<p class="field-error" id="f-name-error">([^<]+)</p>', refused.text)
        assert error is not None
        assert "DNS-safe" in error.group(1)
        assert 'aria-invalid="true"' in refused.text
        listed = await console.get("clusters/-/rows")
        assert "data-cluster" not in listed.text


async def test_a_form_without_the_csrf_token_is_refused(app: FastAPI, factory: Factory) -> None:
    tenant = await factory.tenant()
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        refused = await console.post("clusters", {"name": "web"}, csrf=False)
        assert refused.status_code == 403
        forged = await console.post("clusters", {"name": "web", "csrf": "0" * 64}, csrf=False)
        assert forged.status_code == 403
        assert "data-cluster" not in (await console.get("clusters/-/rows")).text


async def test_a_readonly_member_sees_no_write_controls_and_a_forged_write_is_refused(
    app: FastAPI, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await factory.member(tenant.id, "viewer@example.com", Role.readonly)
    async with console_session(app, tenant.name, "viewer@example.com") as console:
        page = await console.get("clusters")
        assert "Create cluster" not in page.text
        assert "read-only" in page.text
        forged = await console.post("clusters", {"name": "web"})
        assert forged.status_code == 403
        assert "admin access required" in forged.text


async def test_the_kubeconfig_download_is_a_valid_kubeconfig(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        assert (await console.post("clusters", {"name": "web"})).status_code == 303
        await wait_running(client, tenant.path, tenant.admin_key, "web")
        detail = await console.get("clusters/web")
        assert "Download kubeconfig" in detail.text
        assert "Certificate authority" in detail.text
        downloaded = await console.post("clusters/web/kubeconfig")
        assert downloaded.status_code == 200, downloaded.text
        assert "attachment" in downloaded.headers["content-disposition"]
        document = yaml.safe_load(downloaded.text)
        ca = document["clusters"][0]["cluster"]["certificate-authority-data"]
        assert ca in detail.text
        assert document["current-context"] == f"{tenant.name}-web"
        assert document["users"][0]["user"]["token"]
        assert document["clusters"][0]["cluster"]["server"].startswith("https://")


async def test_a_console_write_is_audited_as_the_member_from_the_browsers_address(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        created = await console.post("clusters", {"name": "web"})
        assert created.status_code == 303
        request_id = created.headers["x-request-id"]
    events = await client.get(
        f"{tenant.path}/events",
        params={"action": "cluster.create"},
        headers={"Authorization": f"Bearer {tenant.admin_key}"},
    )
    [event] = events.json()["items"]
    assert event["actor"] == {"kind": "member", "email": tenant.admin_email}
    assert event["sourceIp"] == "203.0.113.20"
    assert event["requestId"] == request_id


async def test_a_readonly_member_opening_a_create_form_is_told_it_is_for_admins(
    app: FastAPI, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await factory.member(tenant.id, "viewer@example.com", Role.readonly)
    async with console_session(app, tenant.name, "viewer@example.com") as console:
        for form in ("clusters/-/new", "secrets/-/new", "apikeys/new", "alerting/routes/-/new"):
            refused = await console.get(form)
            assert refused.status_code == 403, form
            assert "Only the tenant&#39;s admins" in refused.text
            assert refused.text.count('method="post"') == 1  # sign-out's, no other
