"""What the browser is kept from: requesting anything from another origin (the identity
provider's pages aside, during the sign-in only), and running inline script or style: every
console page carries the Content-Security-Policy header, and the browser enforces it."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.console.browser.contexts import OpenContext
from tests.console.browser.steps import ConsoleServer, sign_in_with_oidc
from tests.console.browser.traffic import CSP_VIOLATION, Traffic, origin_of, policy_problems

pytestmark = pytest.mark.console

CLUSTER = "blog"


def test_a_whole_journey_requests_nothing_from_another_origin(
    open_context: OpenContext, console_server: ConsoleServer, traffic: Traffic
) -> None:
    page = open_context().new_page()
    page.goto(console_server.url("/console/"))
    expect(page).to_have_url(console_server.url("/console/sign-in"))
    before_sign_in = len(traffic.requests)
    sign_in_with_oidc(page, console_server, traffic, console_server.admin)
    after_sign_in = len(traffic.requests)

    page.get_by_role("link", name="Create cluster").click()
    page.get_by_label("Name").fill(CLUSTER)
    page.get_by_role("button", name="Create cluster").click()
    expect(page.get_by_role("status")).to_have_text(f"Cluster {CLUSTER} is being created.")
    page.get_by_role("link", name="← Clusters").click()
    expect(page.locator(f'tr[data-cluster="{CLUSTER}"]')).to_be_visible()
    # One poll of the live list at least (the new cluster is changing), then out.
    with page.expect_response(re.compile(r"/clusters/-/rows$")):
        pass
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(console_server.url("/console/sign-in"))

    server, provider = console_server.base_url, console_server.issuer
    sign_in = traffic.requests[before_sign_in:after_sign_in]
    elsewhere = traffic.requests[:before_sign_in] + traffic.requests[after_sign_in:]
    assert any(origin_of(url) == provider for url in sign_in)
    assert [url for url in sign_in if origin_of(url) not in (server, provider)] == (
        traffic.providers_own
    ), "only the provider's own page may request elsewhere, during the sign-in"
    assert [url for url in elsewhere if origin_of(url) != server] == []
    assert traffic.outside == []

    pages = [url for url, _ in traffic.console_pages]
    assert len(pages) >= 8, pages
    assert {url: policy_problems(policy) for url, policy in traffic.console_pages} == {
        url: [] for url in pages
    }


def test_the_browser_refuses_inline_script_and_style(
    admin_page: Page, console_server: ConsoleServer, traffic: Traffic
) -> None:
    page = admin_page
    page.goto(console_server.tenant_url("clusters"))
    # console.js ran (it is a script of the server's own): the theme toggle is wired.
    expect(page.locator("[data-theme-toggle]")).to_have_attribute("aria-pressed", re.compile("."))

    with page.expect_console_message(lambda message: CSP_VIOLATION in message.text) as blocked:
        ran = page.evaluate(
            """() => {
                window.injectedScriptRan = false;
                const script = document.createElement("script");
                script.textContent = "window.injectedScriptRan = true";
                document.body.append(script);
                return window.injectedScriptRan;
            }"""
        )
    assert ran is False
    assert "script-src" in blocked.value.text

    with page.expect_console_message(lambda message: CSP_VIOLATION in message.text) as blocked:
        width = page.evaluate(
            """() => {
                const heading = document.querySelector("h1");
                const before = getComputedStyle(heading).width;
                heading.setAttribute("style", "width: 7px");
                return [before, getComputedStyle(heading).width];
            }"""
        )
    assert width[0] == width[1] != "7px"
    assert "style-src" in blocked.value.text

    # These two were provoked here; any other would fail the test when it ends.
    assert len(traffic.csp_violations) == 2, traffic.csp_violations
    traffic.csp_violations.clear()
