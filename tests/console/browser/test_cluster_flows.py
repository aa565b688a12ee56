"""A cluster's life as an admin sees it in the browser: created through the form, watched
reaching Running on the list without a reload, opened, its kubeconfig downloaded and read
by kubectl."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.console.browser.steps import (
    PHASE_TIMEOUT_MS,
    ConsoleServer,
    not_reloaded,
    phase_badge,
)

pytestmark = pytest.mark.console

CLUSTER = "shop"


def test_a_cluster_created_through_the_form_reaches_running_on_the_live_list(
    admin_page: Page, console_server: ConsoleServer, tmp_path: Path
) -> None:
    page = admin_page
    page.goto(console_server.tenant_url("clusters"))
    page.get_by_role("link", name="Create cluster").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Create cluster")
    page.get_by_label("Name").fill(CLUSTER)
    page.get_by_role("button", name="Create cluster").click()

    detail = console_server.tenant_url(f"clusters/{CLUSTER}")
    expect(page).to_have_url(re.compile(f"^{re.escape(detail)}(\\?|$)"))
    expect(page.get_by_role("status")).to_have_text(f"Cluster {CLUSTER} is being created.")

    # The list, as served, shows the cluster before it runs ...
    with page.expect_navigation() as navigated:
        page.get_by_role("link", name="← Clusters").click()
    listed = navigated.value
    assert listed is not None
    served_row = listed.text().split(f'data-cluster="{CLUSTER}"', 1)[1].split("</tr>", 1)[0]
    assert ">Running<" not in served_row, "the cluster ran before the list was shown"

    # ... and the same document, never reloaded, shows it Running.
    with not_reloaded(page):
        expect(phase_badge(page, CLUSTER)).to_have_text("Running", timeout=PHASE_TIMEOUT_MS)

    page.get_by_role("link", name=CLUSTER, exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(CLUSTER)
    endpoint = page.locator("dt:text-is('Endpoint') + dd code").inner_text()
    assert endpoint.startswith("https://")

    with page.expect_download() as downloading:
        page.get_by_role("button", name="Download kubeconfig").click()
    download = downloading.value
    context = f"{console_server.tenant}-{CLUSTER}"
    assert download.suggested_filename == f"{context}.kubeconfig"
    kubeconfig = tmp_path / download.suggested_filename
    download.save_as(kubeconfig)

    viewed = subprocess.run(
        ["kubectl", "config", "view", "--kubeconfig", str(kubeconfig), "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert viewed.returncode == 0, viewed.stderr
    config = json.loads(viewed.stdout)
    assert config["current-context"] == context
    [cluster] = config["clusters"]
    assert cluster["name"] == context
    assert cluster["cluster"]["server"] == endpoint
    [named_context] = config["contexts"]
    assert named_context["name"] == context
    assert named_context["context"] == {"cluster": context, "user": context}
    [user] = config["users"]
    assert user["name"] == context
    # kubectl hides the token; the file holds one of the admin's (what the API issued).
    assert "token" in user["user"]
    assert "token: " in kubeconfig.read_text()

    with console_server.api() as api:
        assert api.get(f"/clusters/{CLUSTER}").json()["status"]["phase"] == "Running"
