"""`tenantplane console-login TENANT EMAIL`: a one-time link for a member, refused for
anyone else."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import httpx
from fastapi import FastAPI

from tests.apikey.test_cli import invoke
from tests.factories import Factory
from tests.http_client import BASE_URL


async def test_the_printed_link_signs_the_member_in_once(
    app: FastAPI, factory: Factory, database_url: str
) -> None:
    tenant = await factory.tenant()
    result = await invoke(
        database_url,
        "console-login",
        tenant.name,
        tenant.admin_email.upper(),
        "--url",
        "https://console.example.com/",
        "--json",
    )
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["email"] == tenant.admin_email
    assert printed["expiresInMinutes"] == 15
    link = urlsplit(printed["url"])
    assert (link.scheme, link.netloc, link.path) == (
        "https",
        "console.example.com",
        "/console/sign-in/link",
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as browser:
        signed_in = await browser.get(f"{link.path}?{link.query}")
        assert signed_in.status_code == 200
        page = await browser.get(f"/console/t/{tenant.name}/clusters")
        assert page.status_code == 200
        assert tenant.admin_email in page.text
        assert (await browser.get(f"{link.path}?{link.query}")).status_code == 400


async def test_a_link_is_printed_only_for_a_member(factory: Factory, database_url: str) -> None:
    tenant = await factory.tenant()
    stranger = await invoke(
        database_url, "console-login", tenant.name, "someone@example.com", "--json"
    )
    assert stranger.exit_code == 1
    assert json.loads(stranger.stdout)["error"]["code"] == "NOT_A_MEMBER"
    unknown = await invoke(database_url, "console-login", "no-such-tenant", tenant.admin_email)
    assert unknown.exit_code == 1
    invalid = await invoke(database_url, "console-login", tenant.name, "not-an-email")
    assert invalid.exit_code == 2
