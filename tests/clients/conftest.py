"""One real `tenantplane serve` process per session (SQLite), a tenant per test, tpctl run
against it, and the misbehaving proxy for the retry tests; a second server for webhooks,
allowed to send them to the tests' loopback receivers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tenantplane.db.engine import Database
from tests.clients.proxy import Proxy, serve
from tests.conftest import TEST_SECRET
from tests.contract.server import Served, served, server_env
from tests.factories import Factory


@dataclass(frozen=True)
class Tenant:
    url: str
    name: str
    key: str


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("server"), tenant="clients") as running:
        yield running


# Loopback receivers are private destinations: this server may send to them, and retries a
# failed delivery after 50 ms instead of 10 s.
WEBHOOK_SERVER_ENV = {
    "TENANTPLANE_ALERTING_FIREWALL_BLOCK_PRIVATE": "false",
    "TENANTPLANE_WEBHOOK_RETRY_BASE_SECONDS": "0.05",
    "TENANTPLANE_RECONCILE_IDLE_POLL_SECONDS": "0.1",
}


# For a module, not the run: at that idle poll an idle server takes a third of a core.
@pytest.fixture(scope="module")
def webhook_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(
        tmp_path_factory.mktemp("webhook-server"), tenant="clients", extra_env=WEBHOOK_SERVER_ENV
    ) as running:
        yield running


async def new_tenant(server: Served) -> Tenant:
    """A fresh tenant on ``server`` (so tests do not see each other's resources), made in
    its database as the operator command makes one, without a process's start-up."""
    env = server_env(Path(server.log).parent)
    database = Database.connect(env["TENANTPLANE_DATABASE_URL"])
    try:
        made = await Factory(database, TEST_SECRET.encode()).tenant(f"c-{uuid.uuid4().hex[:10]}")
    finally:
        await database.dispose()
    return Tenant(server.base_url, made.name, made.admin_key)


@pytest.fixture
async def tenant(server: Served) -> Tenant:
    return await new_tenant(server)


@pytest.fixture
async def webhook_tenant(webhook_server: Served) -> Tenant:
    """A fresh tenant on the server that may send webhooks to loopback."""
    return await new_tenant(webhook_server)


@pytest.fixture
def proxy(server: Served) -> Iterator[tuple[Proxy, str]]:
    with serve(server.base_url) as running:
        yield running


TPCTL = str(Path(sys.executable).parent / "tpctl")

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def tpctl_environment(tenant: Tenant, home: Path) -> dict[str, str]:
    """What tpctl needs to reach ``tenant``: PATH, HOME and config in ``home``, TPCTL_*."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "TPCTL_URL": tenant.url,
        "TPCTL_TENANT": tenant.name,
        "TPCTL_API_KEY": tenant.key,
    }


def tpctl_for(tenant: Tenant, home: Path) -> Run:
    """tpctl with the tenant's API key in the environment (TPCTL_*), HOME and config in tmp."""

    def run(*args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> Any:
        environment = {
            **tpctl_environment(tenant, home),
            "TPCTL_RETRY_BASE_SECONDS": "0.01",
            **(env or {}),
        }
        return subprocess.run(
            [TPCTL, *args],
            env=environment,
            capture_output=True,
            text=True,
            input=stdin,
            check=False,
        )

    return run


@pytest.fixture
def tpctl(tenant: Tenant, home: Path) -> Run:
    return tpctl_for(tenant, home)


def ok(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout) if result.stdout.strip() else None
