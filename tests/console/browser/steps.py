"""What a person does in the console, step by step in the browser, and the server the
browser talks to (a `tenantplane serve` process, its operator CLI and the mock provider)."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Frame, Locator, Page, expect

from tests.console.browser.traffic import Traffic
from tests.contract.server import TENANTPLANE

# A cluster's phase takes a few simulator steps to change; a loaded machine is slow.
PHASE_TIMEOUT_MS = 120_000
# What a reconciler does by itself (a secret synced, a payment applied) is this long at most.
RECONCILE_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True)
class ConsoleServer:
    base_url: str
    issuer: str
    tenant: str
    admin_key: str
    admin: str
    reader: str
    env: dict[str, str]
    log: Path

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def tenant_url(self, path: str = "") -> str:
        return self.url(f"/console/t/{self.tenant}/{path}")

    def operator(self, *arguments: str) -> str:
        """The operator's CLI on the server's database; its standard output."""
        done = subprocess.run(
            [TENANTPLANE, *arguments], env=self.env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, f"tenantplane {' '.join(arguments)}: {done.stderr}"
        return done.stdout

    def operators(self, *commands: Sequence[str]) -> None:
        """Several operator commands at once: each is a process that takes seconds to start."""
        started = [
            subprocess.Popen(
                [TENANTPLANE, *command],
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for command in commands
        ]
        for command, process in zip(commands, started, strict=True):
            _, errors = process.communicate()
            assert process.returncode == 0, f"tenantplane {' '.join(command)}: {errors!r}"

    def api(self) -> httpx.Client:
        """The public API as the tenant's admin key (to check what the browser changed)."""
        return httpx.Client(
            base_url=f"{self.base_url}/api/v1/tenants/{self.tenant}",
            headers={"Authorization": f"Bearer {self.admin_key}"},
            timeout=30,
        )


def sign_in_with_oidc(page: Page, server: ConsoleServer, traffic: Traffic, email: str) -> None:
    """The member's way in: the tenant, the identity provider's page, back on the clusters."""
    page.goto(server.url("/console/sign-in"))
    form = page.locator('form[action="/console/sign-in/oidc"]')
    form.get_by_label("Tenant").fill(server.tenant)
    with traffic.allowing(server.issuer):
        form.get_by_role("button", name="Continue with your identity provider").click()
        expect(page).to_have_url(re.compile(f"^{re.escape(server.issuer)}/"))
        page.locator('input[name="sub"]').fill(email)
        page.get_by_role("button", name="Authorize").click()
        expect_signed_in(page, server, email)


def sign_in_with_key(page: Page, server: ConsoleServer, key: str) -> None:
    page.goto(server.url("/console/sign-in"))
    form = page.locator('form[action="/console/sign-in/key"]')
    form.get_by_label("Tenant").fill(server.tenant)
    form.get_by_label("API key").fill(key)
    form.get_by_role("button", name="Sign in with an API key").click()
    expect_signed_in(page, server, "API key")


def console_login(server: ConsoleServer, email: str) -> str:
    """The one-time link `tenantplane console-login` prints for ``email``."""
    return server.operator("console-login", server.tenant, email, "--url", server.base_url).strip()


def sign_in_with_link(page: Page, server: ConsoleServer, email: str) -> None:
    page.goto(console_login(server, email))
    expect_signed_in(page, server, email)


def expect_signed_in(page: Page, server: ConsoleServer, label: str) -> None:
    """On the tenant's clusters page (where every sign-in leads), signed in as ``label``."""
    expect(page).to_have_url(server.tenant_url("clusters"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Clusters")
    expect(page.locator("header .who")).to_contain_text(label)


def csrf_token(page: Page) -> str:
    """The session's CSRF token, as the page's forms carry it (the sign-out form at least)."""
    token = page.locator('input[name="csrf"]').first.get_attribute("value")
    assert token, "the page has no CSRF token"
    return token


def phase_badge(page: Page, cluster: str) -> Locator:
    """The phase of ``cluster`` in the clusters list (its row's second cell)."""
    return page.locator(f'tr[data-cluster="{cluster}"] td').nth(1)


def create_cluster_by_api(server: ConsoleServer, name: str) -> None:
    with server.api() as api:
        created = api.post("/clusters", json={"name": name})
    assert created.status_code == 201, created.text


def wait_until_running(page: Page, server: ConsoleServer, cluster: str) -> None:
    """On the clusters list, which polls while a cluster changes, until ``cluster`` runs."""
    page.goto(server.tenant_url("clusters"))
    expect(phase_badge(page, cluster)).to_have_text("Running", timeout=PHASE_TIMEOUT_MS)


def wait_for_document(
    server: ConsoleServer, path: str, done: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The API's document at ``path`` (under the tenant) once ``done`` holds of it."""
    give_up = time.monotonic() + RECONCILE_TIMEOUT_SECONDS
    with server.api() as api:
        while True:
            answer = api.get(path)
            assert answer.status_code == 200, answer.text
            document: dict[str, Any] = answer.json()
            if done(document):
                return document
            assert time.monotonic() < give_up, f"{path} never became as expected: {document}"
            time.sleep(0.2)  # polling a condition with a deadline


@contextmanager
def not_reloaded(page: Page) -> Iterator[None]:
    """The block's expectations are met by the document shown when it began (a live region
    polled by console.js): the main frame does not navigate, and a mark set on its window
    survives."""
    navigations: list[str] = []

    def count_navigation(frame: Frame) -> None:
        if frame == page.main_frame:
            navigations.append(frame.url)

    page.on("framenavigated", count_navigation)
    page.evaluate("window.consoleTestMark = 'not reloaded'")
    yield
    page.remove_listener("framenavigated", count_navigation)
    assert page.evaluate("window.consoleTestMark") == "not reloaded"
    assert navigations == []
