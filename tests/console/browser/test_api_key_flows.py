"""An API key's life as an admin sees it in the browser: created, shown once with a Copy
button that puts it on the clipboard, used against the API, revoked behind its typed name,
after which the API refuses it."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Page, Response, StorageState, expect

from tests.console.browser.contexts import OpenContext
from tests.console.browser.steps import ConsoleServer

pytestmark = pytest.mark.console

KEY_NAME = "CI deploys"


def answers_with(server: ConsoleServer, key: str, method: str = "GET") -> int:
    """The status the public API answers ``key`` with on the tenant's clusters (a list, or
    with POST the creation of one)."""
    answer = httpx.request(
        method,
        server.url(f"/api/v1/tenants/{server.tenant}/clusters"),
        json={"name": "by-key"} if method == "POST" else None,
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    return answer.status_code


def is_create(response: Response) -> bool:
    return response.request.method == "POST" and response.url.endswith("/apikeys")


def test_a_key_is_shown_once_copied_used_and_revoked(
    open_context: OpenContext, admin_state: StorageState, console_server: ConsoleServer
) -> None:
    # The Copy button writes to the clipboard; this browser lets the test read it back.
    context = open_context(admin_state, permissions=["clipboard-read", "clipboard-write"])
    page: Page = context.new_page()
    page.goto(console_server.tenant_url("apikeys"))
    page.get_by_role("link", name="Create API key").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Create API key")
    page.get_by_label("Name").fill(KEY_NAME)
    page.get_by_label("Role").select_option("readonly")
    with page.expect_response(is_create) as creating:
        page.get_by_role("button", name="Create API key").click()
    created = creating.value
    assert created.status == 201
    assert created.headers["cache-control"] == "no-store"

    expect(page.get_by_role("heading", level=1)).to_have_text("API key created")
    key = page.locator("#new-key").inner_text().strip()
    assert len(key) >= 32, key
    key_id = page.locator("dt:text-is('Id') + dd code").inner_text()
    page.get_by_role("button", name="Copy").click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == key

    # The key works: a read-only one reads, and may not write.
    assert answers_with(console_server, key) == 200
    assert answers_with(console_server, key, "POST") == 403

    # Shown once: neither the list nor the key's own page holds it.
    page.get_by_role("link", name="Done: back to the API keys").click()
    row = page.locator(f'tr[data-key="{key_id}"]')
    expect(row.locator("td").first).to_have_text(KEY_NAME)
    assert key not in page.content()
    row.get_by_role("link", name=f"Revoke {KEY_NAME}…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(KEY_NAME)
    assert key not in page.content()

    revoke = page.get_by_role("button", name="Revoke API key")
    confirm = page.get_by_label("Type the key's name to revoke it")
    expect(revoke).to_be_disabled()
    confirm.fill(KEY_NAME.lower())
    expect(revoke).to_be_disabled()
    confirm.fill(KEY_NAME)
    expect(revoke).to_be_enabled()
    revoke.click()

    expect(page).to_have_url(re.compile(re.escape(console_server.tenant_url("apikeys"))))
    expect(page.get_by_role("status")).to_have_text(
        f"API key {KEY_NAME} was revoked: it no longer authenticates."
    )
    expect(page.locator(f'tr[data-key="{key_id}"]')).to_have_count(0)
    assert answers_with(console_server, key) == 401
