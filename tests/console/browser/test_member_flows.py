"""Members as an admin manages them in the browser: one invited as read-only, made admin and
removed; and the only admin, demoting themself, refused with the reason in their own row."""

from __future__ import annotations

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.console.browser.steps import ConsoleServer

pytestmark = pytest.mark.console

INVITED = "mia@acme.example"
LAST_ADMIN = "A tenant keeps at least one admin: make another member admin first."


def member_row(page: Page, email: str) -> Locator:
    return page.locator(f'tr[data-member="{email}"]')


def role_cell(page: Page, email: str) -> Locator:
    return member_row(page, email).locator("td").nth(1)


def roles(server: ConsoleServer) -> dict[str, str]:
    """Every member's role, as the API holds them."""
    with server.api() as api:
        listed = api.get("/members", params={"limit": 1000})
    assert listed.status_code == 200, listed.text
    return {member["email"]: member["role"] for member in listed.json()["items"]}


def test_a_member_is_invited_read_only_made_admin_and_removed(
    admin_page: Page, console_server: ConsoleServer
) -> None:
    page = admin_page
    page.goto(console_server.tenant_url("members"))
    invite = page.locator("section", has=page.get_by_role("heading", name="Invite a member"))
    invite.get_by_label("Email").fill(INVITED)
    invite.get_by_label("Role", exact=True).select_option("readonly")
    invite.get_by_role("button", name="Invite").click()

    expect(page.get_by_role("status")).to_have_text(f"{INVITED} was added as readonly.")
    expect(role_cell(page, INVITED)).to_have_text("readonly")
    assert roles(console_server)[INVITED] == "readonly"

    row = member_row(page, INVITED)
    row.get_by_label(f"Role of {INVITED}").select_option("admin")
    row.get_by_role("button", name="Change role").click()
    expect(page.get_by_role("status")).to_have_text(f"{INVITED} is now admin.")
    expect(role_cell(page, INVITED)).to_have_text("admin")
    assert roles(console_server)[INVITED] == "admin"

    row.get_by_role("button", name=f"Remove {INVITED}").click()
    expect(page.get_by_role("status")).to_have_text(
        f"{INVITED} was removed from {console_server.tenant}."
    )
    expect(member_row(page, INVITED)).to_have_count(0)
    assert INVITED not in roles(console_server)


def test_the_only_admin_demoting_themself_is_told_why_in_their_row(
    admin_page: Page, console_server: ConsoleServer
) -> None:
    admin = console_server.admin
    # Were another admin left behind, the demotion would succeed and sign the admin's
    # session down to read-only for the rest of the run: stop here instead.
    assert [email for email, role in roles(console_server).items() if role == "admin"] == [admin]
    page = admin_page
    page.goto(console_server.tenant_url("members"))
    own = member_row(page, admin)
    expect(own.locator("td").first).to_have_text(f"{admin} (you)")
    role = own.get_by_label(f"Role of {admin}")
    role.select_option("readonly")
    own.get_by_role("button", name="Change role").click()

    refusal = member_row(page, admin).locator('[data-refusal="role"]')
    expect(refusal).to_contain_text(LAST_ADMIN)
    expect(refusal).to_contain_text("The API said: ")
    expect(refusal).to_have_attribute("role", "alert")
    refusal_id = refusal.get_attribute("id")
    assert refusal_id
    expect(role).to_have_attribute("aria-invalid", "true")
    expect(role).to_have_attribute("aria-describedby", refusal_id)
    # Nothing changed: the row, the header and the API say admin.
    expect(role_cell(page, admin)).to_have_text("admin")
    expect(role).to_have_value("admin")
    expect(page.locator("header .who .badge")).to_have_count(0)
    assert roles(console_server)[admin] == "admin"
