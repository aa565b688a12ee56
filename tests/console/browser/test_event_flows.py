"""The events page after writes made through the console: each is listed as the admin
member's (with the status the API answered), and the filter form narrows the list to one
kind of action (``cluster.*``), as a link to share."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.console.browser.steps import ConsoleServer

pytestmark = pytest.mark.console

AUDITED = "audited"


def event_rows(page: Page, action: str, resource: str) -> Locator:
    """The listed events of ``action`` on ``resource`` (kind/name)."""
    return (
        page.locator("tr[data-event]")
        .filter(has=page.locator("td:nth-child(3) code", has_text=re.compile(f"^{action}$")))
        .filter(has=page.locator("td:nth-child(4)", has_text=re.compile(f"^{resource}$")))
    )


def listed_actions(page: Page) -> list[str]:
    return page.locator("tr[data-event] td:nth-child(3) code").all_inner_texts()


def test_the_consoles_writes_are_listed_and_the_filter_narrows_them(
    admin_page: Page, console_server: ConsoleServer
) -> None:
    page = admin_page
    # Two writes through the console's forms: a cluster and a secret.
    page.goto(console_server.tenant_url("clusters/-/new"))
    page.get_by_label("Name").fill(AUDITED)
    page.get_by_role("button", name="Create cluster").click()
    expect(page.get_by_role("status")).to_have_text(f"Cluster {AUDITED} is being created.")
    page.goto(console_server.tenant_url("secrets/-/new"))
    page.get_by_label("Name", exact=True).fill(AUDITED)
    page.get_by_label("Vault path").fill("apps/audited")
    page.get_by_role("button", name="Create secret").click()
    expect(page.get_by_role("status")).to_have_text(f"Secret {AUDITED} was created.")

    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Events").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Events")
    for action, kind in (("cluster.create", "cluster"), ("secret.create", "secret")):
        written = event_rows(page, action, f"{kind}/{AUDITED}")
        expect(written).to_have_count(1)
        expect(written.locator("td").nth(1)).to_have_text("audit")
        expect(written.locator("td").nth(4)).to_have_text(console_server.admin)
        expect(written.locator("td").nth(5)).to_have_text("201")
    assert any(not action.startswith("cluster.") for action in listed_actions(page))

    page.locator("summary", has_text="Filters").click()
    page.get_by_label("Action").fill("cluster.*")
    page.get_by_role("button", name="Apply filters").click()

    expect(page).to_have_url(re.compile(r"/events\?(.*&)?action=cluster\.(\*|%2A)(&|$)"))
    expect(page.get_by_text("Filters (active)")).to_be_visible()
    expect(page.get_by_label("Action")).to_have_value("cluster.*")
    expect(event_rows(page, "cluster.create", f"cluster/{AUDITED}")).to_have_count(1)
    expect(event_rows(page, "secret.create", f"secret/{AUDITED}")).to_have_count(0)
    actions = listed_actions(page)
    assert actions, "the filter left nothing"
    assert [action for action in actions if not action.startswith("cluster.")] == []

    page.get_by_role("link", name="Clear filters").click()
    expect(page).to_have_url(console_server.tenant_url("events"))
    expect(event_rows(page, "secret.create", f"secret/{AUDITED}")).to_have_count(1)
