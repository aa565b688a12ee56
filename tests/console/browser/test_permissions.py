"""Who may change what, from the browser: a read-only member is offered no write control and
a write forged with their session (and its valid CSRF token) is refused by the API; an
admin's session without the CSRF token changes nothing either."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.console.browser.steps import ConsoleServer, csrf_token

pytestmark = pytest.mark.console

SIGN_OUT = "/console/sign-out"


def post_forms(page: Page) -> list[str]:
    """The paths the page's forms post to."""
    paths: list[str] = page.eval_on_selector_all(
        "form",
        "forms => forms.filter((form) => form.method === 'post')"
        ".map((form) => new URL(form.action).pathname)",
    )
    return paths


def test_a_readonly_member_is_offered_no_write_control(
    reader_page: Page, console_server: ConsoleServer, running_cluster: str
) -> None:
    page = reader_page
    page.goto(console_server.tenant_url("clusters"))
    expect(page.locator("header .who .badge")).to_have_text("read-only")
    expect(page.locator(f'tr[data-cluster="{running_cluster}"]')).to_be_visible()
    expect(page.get_by_role("link", name="Create cluster")).to_have_count(0)
    expect(page.get_by_role("link", name="Create the first one")).to_have_count(0)
    assert post_forms(page) == [SIGN_OUT]

    page.get_by_role("link", name=running_cluster, exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(running_cluster)
    for heading in ("Upgrade", "Resize", "Delete"):
        expect(page.get_by_role("heading", name=heading)).to_have_count(0)
    # Downloading a kubeconfig is a member's own credential (any role may: docs/access.md);
    # the cluster maps a read-only member to read-only.
    kubeconfig = f"/console/t/{console_server.tenant}/clusters/{running_cluster}/kubeconfig"
    assert post_forms(page) == [SIGN_OUT, kubeconfig]


def test_a_write_forged_with_a_readonly_session_is_refused_by_the_api(
    reader_page: Page, console_server: ConsoleServer, running_cluster: str
) -> None:
    page = reader_page
    page.goto(console_server.tenant_url("clusters"))
    token = csrf_token(page)
    created = page.request.post(
        console_server.tenant_url("clusters"),
        form={"csrf": token, "name": "forged"},
        max_redirects=0,
    )
    assert created.status == 403, created.text()
    # Refused by the API (shown on the form), not for want of the token.
    assert "CSRF" not in created.text()
    deleted = page.request.post(
        console_server.tenant_url(f"clusters/{running_cluster}/delete"),
        form={"csrf": token, "confirm": running_cluster},
        max_redirects=0,
    )
    assert deleted.status == 403, deleted.text()
    assert "CSRF" not in deleted.text()

    with console_server.api() as api:
        assert api.get("/clusters/forged").status_code == 404
        assert api.get(f"/clusters/{running_cluster}").json()["status"]["phase"] == "Running"


def test_an_admins_session_without_the_csrf_token_changes_nothing(
    admin_page: Page, console_server: ConsoleServer
) -> None:
    page = admin_page
    page.goto(console_server.tenant_url("clusters"))
    missing = page.request.post(
        console_server.tenant_url("clusters"), form={"name": "no-token"}, max_redirects=0
    )
    assert missing.status == 403, missing.text()
    assert "CSRF" in missing.text()
    wrong = page.request.post(
        console_server.tenant_url("clusters"),
        form={"csrf": "0" * len(csrf_token(page)), "name": "no-token"},
        max_redirects=0,
    )
    assert wrong.status == 403, wrong.text()

    with console_server.api() as api:
        assert api.get("/clusters/no-token").status_code == 404
    # The same session with its token may (the refusals above were the token's absence).
    allowed = page.request.post(
        console_server.tenant_url("clusters"),
        form={"csrf": csrf_token(page), "name": "with-token"},
        max_redirects=0,
    )
    assert allowed.status == 303, allowed.text()
