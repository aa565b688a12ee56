"""The browser tests' fixtures: one `tenantplane serve` process (SQLite, the simulator) with
the loopback OIDC provider and the fake Paddle (billing.py) for the whole run, Debian's
Chromium driven by Playwright (the provider's receipt host on loopback: receipts.py), and
browsing contexts that record what every test's browser sent and received (traffic.py):
after each test, no request may have left the server's origin, every console page must
have carried the Content-Security-Policy header and the browser must have reported no CSP
violation. A failing test leaves a screenshot of each of its pages in the artifacts."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from playwright.sync_api import (
    Browser,
    Page,
    StorageState,
    expect,
    sync_playwright,
)

from tests.console.browser.accessibility import axe_source
from tests.console.browser.billing import billing_env, link_to_paddle, paid_invoice
from tests.console.browser.contexts import TIMEOUT_MS, OpenContext, new_context
from tests.console.browser.receipts import ReceiptHost, receipt_host
from tests.console.browser.steps import (
    ConsoleServer,
    create_cluster_by_api,
    sign_in_with_link,
    wait_for_document,
    wait_until_running,
)
from tests.console.browser.traffic import Traffic
from tests.contract.server import TENANTPLANE, server_env, serving
from tests.fakes.paddle import FakePaddle
from tests.oidc_provider import mock_provider

CHROMIUM = Path("/usr/bin/chromium")
REPOSITORY = Path(__file__).resolve().parents[3]
TENANT = "acme"
ADMIN = "ana@acme.example"
READER = "rui@acme.example"
# A new cluster runs after two simulator steps: steps this long keep it out of Running
# for six seconds at least, far longer than the browser takes from the create form to the
# list (about one), so the list is seen showing it change.
SIMULATOR_STEP_SECONDS = "3"
RUNNING_CLUSTER = "web"
SYNCED_SECRET = "db-creds"

expect.set_options(timeout=TIMEOUT_MS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The mock provider (run in this process) uses authlib APIs that authlib now marks
    deprecated: its warnings, raised while the browser signs in, are not these tests'."""
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here):
            item.add_marker(pytest.mark.filterwarnings("ignore::DeprecationWarning:authlib"))


def artifacts_dir() -> Path:
    """TENANTPLANE_CONSOLE_ARTIFACTS, else var/console-artifacts/ (git-ignored: var/)."""
    configured = os.environ.get("TENANTPLANE_CONSOLE_ARTIFACTS")
    return Path(configured) if configured else REPOSITORY / "var" / "console-artifacts"


@pytest.fixture(scope="session")
def artifacts() -> Path:
    directory = artifacts_dir()
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@pytest.fixture(scope="session")
def paddle() -> Iterator[FakePaddle]:
    """The payment provider of the server (billing.py), on a loopback port."""
    fake = FakePaddle().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="session")
def console_server(
    tmp_path_factory: pytest.TempPathFactory, paddle: FakePaddle
) -> Iterator[ConsoleServer]:
    """The server for the whole run: tenant acme, an admin and a read-only member whose
    verified addresses the identity provider knows (their subjects are their addresses),
    the tenant a customer of the fake Paddle."""
    directory = tmp_path_factory.mktemp("console-server")
    with mock_provider() as provider:
        env = {
            **server_env(directory),
            **billing_env(paddle),
            "TENANTPLANE_OIDC_ISSUER": provider.issuer,
            "TENANTPLANE_OIDC_AUDIENCE": provider.audience,
            # The mock provider authenticates its clients; any secret will do.
            "TENANTPLANE_CONSOLE_OIDC_CLIENT_SECRET": "browser-tests",
            "TENANTPLANE_SIMULATOR_STEP_SECONDS": SIMULATOR_STEP_SECONDS,
        }
        log = directory / "server.log"
        with serving(env, log) as base_url:
            creation = ("tenant", "create", TENANT, "--plan", "enterprise", "--admin-email", ADMIN)
            created = subprocess.run(
                [TENANTPLANE, *creation, "--json"], env=env, capture_output=True, check=True
            )
            admin_key = json.loads(created.stdout)["apiKey"]["key"]
            server = ConsoleServer(
                base_url, provider.issuer, TENANT, admin_key, ADMIN, READER, env, log
            )
            server.operators(
                ("member", "add", TENANT, READER, "--role", "readonly"),
                link_to_paddle(server, paddle),
            )
            for email in (ADMIN, READER):
                claims = {"email": email, "email_verified": True}
                answer = httpx.put(f"{provider.issuer}/users/{quote(email, safe='')}", json=claims)
                answer.raise_for_status()
            yield server


@pytest.fixture(scope="session")
def receipts() -> Iterator[ReceiptHost]:
    """Where the browser finds the payment provider's receipts (receipts.py)."""
    with receipt_host() as host:
        yield host


@pytest.fixture(scope="session")
def browser(receipts: ReceiptHost) -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/test-deps (as root: it installs it)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=[f"--host-resolver-rules={receipts.resolver_rule}"]
        )
        yield launched
        launched.close()


@pytest.fixture
def traffic(console_server: ConsoleServer) -> Traffic:
    """What this test's browser contexts sent and received."""
    return Traffic(console_server.base_url, console_server.issuer)


@pytest.fixture
def open_context(browser: Browser, traffic: Traffic) -> Iterator[OpenContext]:
    """Contexts closed after the test, then their traffic checked."""
    contexts = OpenContext(browser, traffic)
    yield contexts
    for context in contexts.opened:
        context.close()
    problems = traffic.problems()
    assert problems == [], "\n".join(problems)


@pytest.fixture
def page(open_context: OpenContext) -> Page:
    """A page in a fresh browser, signed in nowhere."""
    return open_context().new_page()


def _signed_in_state(browser: Browser, server: ConsoleServer, email: str) -> StorageState:
    """``email``'s session (its cookie), signed in once through a one-time link: the pages
    and permissions tests do not depend on the identity provider (test_sign_in_flows.py
    and test_security.py sign in through it)."""
    traffic = Traffic(server.base_url, server.issuer)
    context = new_context(browser, traffic, None)
    sign_in_with_link(context.new_page(), server, email)
    state = context.storage_state()
    context.close()
    assert traffic.problems() == []
    return state


@pytest.fixture(scope="session")
def admin_state(browser: Browser, console_server: ConsoleServer) -> StorageState:
    return _signed_in_state(browser, console_server, ADMIN)


@pytest.fixture(scope="session")
def reader_state(browser: Browser, console_server: ConsoleServer) -> StorageState:
    return _signed_in_state(browser, console_server, READER)


@pytest.fixture
def admin_page(open_context: OpenContext, admin_state: StorageState) -> Page:
    """A page in a browser signed in as the tenant's admin."""
    return open_context(admin_state).new_page()


@pytest.fixture
def reader_page(open_context: OpenContext, reader_state: StorageState) -> Page:
    """A page in a browser signed in as the tenant's read-only member."""
    return open_context(reader_state).new_page()


@pytest.fixture(scope="session")
def running_cluster(
    browser: Browser, console_server: ConsoleServer, admin_state: StorageState
) -> str:
    """A cluster that has reached Running (created through the API)."""
    create_cluster_by_api(console_server, RUNNING_CLUSTER)
    traffic = Traffic(console_server.base_url, console_server.issuer)
    context = new_context(browser, traffic, admin_state)
    wait_until_running(context.new_page(), console_server, RUNNING_CLUSTER)
    context.close()
    return RUNNING_CLUSTER


@pytest.fixture(scope="session")
def synced_secret(console_server: ConsoleServer, running_cluster: str) -> str:
    """A secret copied into the Running cluster (created through the API)."""
    with console_server.api() as api:
        target = {"cluster": running_cluster, "namespace": "default"}
        body = {"name": SYNCED_SECRET, "secretPath": "apps/db/credentials", "sync": [target]}
        created = api.post("/secrets", json=body)
    assert created.status_code == 201, created.text
    wait_for_document(
        console_server, f"/secrets/{SYNCED_SECRET}", lambda doc: doc["status"]["phase"] == "Synced"
    )
    return SYNCED_SECRET


@pytest.fixture(scope="session")
def invoice(console_server: ConsoleServer, paddle: FakePaddle) -> dict[str, Any]:
    """The tenant's first invoice, paid through Paddle (its API document)."""
    return paid_invoice(console_server, paddle)


@pytest.fixture(scope="session")
def page_values(
    console_server: ConsoleServer,
    running_cluster: str,
    synced_secret: str,
    invoice: dict[str, Any],
) -> dict[str, str]:
    """What fills the placeholders of pages.PAGES' paths."""
    return {
        "tenant": console_server.tenant,
        "cluster": running_cluster,
        "secret": synced_secret,
        "invoice": str(invoice["name"]),
    }


@pytest.fixture(scope="session")
def axe() -> str:
    """axe-core's script (axe.min.js), as scripts/console-test-deps installed it."""
    return axe_source()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed test leaves a screenshot of each page it had open, and the server's log's
    end is attached to its report."""
    report = yield
    if report.failed and call.when == "call":
        _screenshot_pages(item)
        server = getattr(item, "funcargs", {}).get("console_server")
        if isinstance(server, ConsoleServer) and server.log.exists():
            tail = server.log.read_text(errors="replace")[-4000:]
            report.sections.append(("tenantplane serve (end of its log)", tail))
    return report


def _screenshot_pages(item: pytest.Item) -> None:
    contexts = getattr(item, "funcargs", {}).get("open_context")
    if not isinstance(contexts, OpenContext):
        return
    directory = artifacts_dir() / "failures"
    directory.mkdir(parents=True, exist_ok=True)
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in item.name)
    for context_number, context in enumerate(contexts.opened):
        for page_number, page in enumerate(context.pages):
            page.screenshot(path=directory / f"{name}-{context_number}-{page_number}.png")
