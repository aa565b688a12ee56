"""A secret's life as an admin sees it in the browser: created through the form with one sync
target, listed, its target's sync status watched reaching Synced on the detail page without
a reload, then its target removed through the edit form."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.console.browser.steps import (
    PHASE_TIMEOUT_MS,
    ConsoleServer,
    create_cluster_by_api,
    not_reloaded,
    wait_for_document,
)

pytestmark = pytest.mark.console

SECRET = "jobs-token"
VAULT_PATH = "apps/jobs/token"
# A cluster of its own, created just before the secret: it runs after two simulator steps
# (six seconds at least), so the detail page is seen with the target waiting for it and
# then, by itself, synced into the Running cluster.
CLUSTER = "jobs"
NAMESPACE = "batch"


def target_row(page: Page, index: int) -> Locator:
    """The ``index``-th target fieldset (0-based) of a secret's create or edit form."""
    return page.locator(f'fieldset[data-target-row="{index}"]')


def sync_status(page: Page) -> Locator:
    """The status cell of the target into CLUSTER on the secret's detail page."""
    return page.locator(f'tr[data-target="{CLUSTER}/{NAMESPACE}/{SECRET}"] td').nth(1)


def test_a_secret_is_created_synced_live_and_its_target_removed(
    admin_page: Page, console_server: ConsoleServer
) -> None:
    page = admin_page
    create_cluster_by_api(console_server, CLUSTER)
    page.goto(console_server.tenant_url("secrets"))
    page.get_by_role("link", name="Create secret").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Create secret")
    page.get_by_label("Name", exact=True).fill(SECRET)
    page.get_by_label("Vault path").fill(VAULT_PATH)
    first = target_row(page, 0)
    first.get_by_label("Cluster", exact=True).fill(CLUSTER)
    first.get_by_label("Namespace", exact=True).fill(NAMESPACE)
    page.get_by_role("button", name="Create secret").click()

    detail = console_server.tenant_url(f"secrets/{SECRET}")
    expect(page).to_have_url(re.compile(f"^{re.escape(detail)}(\\?|$)"))
    expect(page.get_by_role("status")).to_have_text(f"Secret {SECRET} was created.")

    page.get_by_role("link", name="← Secrets").click()
    listed = page.locator(f'tr[data-secret="{SECRET}"]')
    expect(listed.locator("td")).to_have_text([SECRET, VAULT_PATH, "1", re.compile(".")])

    # The detail page, as served, shows the target not synced yet (its cluster is not
    # Running) ...
    with page.expect_navigation() as navigated:
        listed.get_by_role("link", name=SECRET).click()
    served = navigated.value
    assert served is not None
    served_row = served.text().split(f'data-target="{CLUSTER}/{NAMESPACE}/{SECRET}"', 1)[1]
    assert ">Synced<" not in served_row.split("</tr>", 1)[0], "synced before it was shown"
    expect(sync_status(page)).to_contain_text("Pending")

    # ... and the same document, never reloaded, shows it Synced.
    with not_reloaded(page):
        expect(sync_status(page)).to_have_text("Synced", timeout=PHASE_TIMEOUT_MS)
        expect(page.locator("tr[data-target] td").nth(2)).to_have_text(
            f"synced to {CLUSTER}/{NAMESPACE}/{SECRET}"
        )

    # Its only target removed (the row cleared), from this same page: its form was read
    # before the new sync status moved the secret's ETag, yet its targets are current.
    for label in ("Cluster", "Namespace", "Secret name in the cluster (optional)"):
        target_row(page, 0).get_by_label(label, exact=True).fill("")
    page.get_by_role("button", name="Save sync targets").click()
    expect(page.get_by_role("status")).to_have_text("Sync targets saved.")
    expect(page.get_by_text("No sync targets: the secret is not copied anywhere.")).to_be_visible()
    expect(page.locator("dt:text-is('Sync targets') + dd")).to_have_text("0")
    expect(target_row(page, 0).get_by_label("Cluster", exact=True)).to_have_value("")

    stored = wait_for_document(
        console_server, f"/secrets/{SECRET}", lambda doc: doc["status"]["phase"] == "Synced"
    )
    assert stored["sync"] == []
    assert stored["secretPath"] == VAULT_PATH
