"""The three ways in, in a real browser: a member through the identity provider, an
automation account with an API key, and the one-time link `tenantplane console-login`
prints (a second use of which is refused)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.console.browser.contexts import OpenContext
from tests.console.browser.steps import (
    ConsoleServer,
    console_login,
    expect_signed_in,
    sign_in_with_key,
    sign_in_with_oidc,
)
from tests.console.browser.traffic import Traffic

pytestmark = pytest.mark.console


def test_a_member_signs_in_through_the_identity_provider(
    page: Page, console_server: ConsoleServer, traffic: Traffic
) -> None:
    sign_in_with_oidc(page, console_server, traffic, console_server.admin)

    header = page.locator("header.top")
    expect(header).to_contain_text(f"{console_server.tenant} · {console_server.admin}")
    expect(header.get_by_text("read-only")).to_have_count(0)
    expect(page.get_by_role("link", name="Create cluster")).to_be_visible()
    # The provider's pages were visited, and nothing of the provider's is left afterwards.
    assert any(url.startswith(console_server.issuer) for url in traffic.requests)
    assert not page.url.startswith(console_server.issuer)


def test_an_automation_account_signs_in_with_an_api_key(
    page: Page, console_server: ConsoleServer
) -> None:
    sign_in_with_key(page, console_server, console_server.admin_key)

    expect(page.locator("header .who")).to_contain_text("API key")
    expect(page.get_by_role("link", name="Create cluster")).to_be_visible()


def test_a_wrong_api_key_is_refused_at_its_field(page: Page, console_server: ConsoleServer) -> None:
    page.goto(console_server.url("/console/sign-in"))
    form = page.locator('form[action="/console/sign-in/key"]')
    form.get_by_label("Tenant").fill(console_server.tenant)
    form.get_by_label("API key").fill("svc_not_a_key")
    form.get_by_role("button", name="Sign in with an API key").click()

    key = form.get_by_label("API key")
    expect(key).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#key-error")).to_be_visible()
    expect(page).to_have_url(console_server.url("/console/sign-in/key"))


def test_a_one_time_link_signs_in_once(
    open_context: OpenContext, console_server: ConsoleServer
) -> None:
    link = console_login(console_server, console_server.reader)
    assert link.startswith(f"{console_server.base_url}/console/sign-in/link?token=")

    first = open_context().new_page()
    first.goto(link)
    expect_signed_in(first, console_server, console_server.reader)
    expect(first.locator("header .who .badge")).to_have_text("read-only")

    # The same link again, from another browser: refused, nobody signed in.
    second = open_context().new_page()
    answer = second.goto(link)
    assert answer is not None
    assert answer.status == 400
    expect(second.get_by_role("heading", level=1)).to_have_text("Sign in")
    expect(second.get_by_role("alert")).to_have_text("this sign-in link was used or has expired")
    assert second.context.cookies() == []
