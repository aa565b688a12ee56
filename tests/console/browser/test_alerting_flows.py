"""Alerting as an admin edits it in the browser: a webhook receiver typed as a document, a
route to it with a matcher, both listed (the route with its matcher); and a receiver the API
refuses, its error beside the textarea and the typed text kept."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.console.browser.steps import ConsoleServer

pytestmark = pytest.mark.console

RECEIVER = "ops"
WEBHOOK = 'webhook_configs: [{url: "https://hooks.example.com/alert"}]'
ROUTE = 'receiver: ops\nmatchers: [severity="critical"]'
MATCHER = 'severity="critical"'


def open_part(page: Page, server: ConsoleServer, part: str) -> None:
    """From the alerting overview, to one of its parts (Receivers, Routes, …)."""
    page.goto(server.tenant_url("alerting"))
    page.get_by_role("link", name=part, exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_have_text(part)


def test_an_admin_adds_a_receiver_and_a_route_to_it_and_sees_both_listed(
    admin_page: Page, console_server: ConsoleServer
) -> None:
    page = admin_page
    open_part(page, console_server, "Receivers")
    page.get_by_role("link", name="Add receiver").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("New receiver")
    page.get_by_label("Name").fill(RECEIVER)
    page.get_by_label("Receiver (YAML or JSON)").fill(WEBHOOK)
    page.get_by_role("button", name="Create receiver").click()

    expect(page).to_have_url(re.compile(re.escape(console_server.tenant_url("alerting/receivers"))))
    expect(page.get_by_role("status")).to_have_text(f"Receiver {RECEIVER} created.")
    expect(page.locator(f'tr[data-item="{RECEIVER}"] td').nth(1)).to_have_text("webhook")

    open_part(page, console_server, "Routes")
    page.get_by_role("link", name="Add route").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("New route")
    page.get_by_label("Route (YAML or JSON)").fill(ROUTE)
    page.get_by_role("button", name="Add route").click()

    expect(page.get_by_role("status")).to_have_text(re.compile(r"^Route \d+ added\.$"))
    added = page.locator("tr[data-route]").filter(has=page.locator("code.matcher"))
    expect(added.locator("code.receiver")).to_have_text([RECEIVER])
    expect(added.locator("code.matcher")).to_have_text([MATCHER])

    page.get_by_role("link", name="← Alerting").click()
    expect(page.locator('[data-count="receivers"]')).to_have_text("2")  # with "default"
    expect(page.locator('[data-count="routes"]')).to_have_text("1")

    with console_server.api() as api:
        receiver = api.get(f"/alerting/receivers/{RECEIVER}").json()
        routes = api.get("/alerting/routes").json()["items"]
    assert receiver["webhook_configs"][0]["url"] == "https://hooks.example.com/alert"
    assert {"receiver": RECEIVER, "matchers": [MATCHER]} in routes


def test_a_receiver_the_api_refuses_shows_why_beside_the_text_kept_as_typed(
    admin_page: Page, console_server: ConsoleServer
) -> None:
    page = admin_page
    typed = 'webhook_configs: [{url: "not a url"}]'
    page.goto(console_server.tenant_url("alerting/receivers/-/new"))
    page.get_by_label("Name").fill("pager")
    document = page.get_by_label("Receiver (YAML or JSON)")
    document.fill(typed)
    page.get_by_role("button", name="Create receiver").click()

    error = page.locator("#f-document-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text(re.compile(r"^webhook_configs\[0\]\.url: "))
    # Beside the textarea: it follows it and describes it.
    expect(page.locator("#f-document + #f-document-error")).to_have_count(1)
    expect(document).to_have_attribute("aria-invalid", "true")
    expect(document).to_have_attribute("aria-describedby", re.compile(r"\bf-document-error\b"))
    expect(document).to_have_value(typed)
    expect(page.get_by_label("Name")).to_have_value("pager")

    with console_server.api() as api:
        assert api.get("/alerting/receivers/pager").status_code == 404
