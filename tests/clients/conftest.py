"""One real `tenantplane serve` process per module (SQLite), a tenant per test, and the
misbehaving proxy for the retry tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("server"), tenant="clients") as running:
        yield running


@pytest.fixture
async def tenant(server: Served) -> Tenant:
    """A fresh tenant on the module's server (so tests do not see each other's resources),
    made in its database as the operator command makes one, without a process's start-up."""
    env = server_env(Path(server.log).parent)
    database = Database.connect(env["TENANTPLANE_DATABASE_URL"])
    try:
        made = await Factory(database, TEST_SECRET.encode()).tenant(f"c-{uuid.uuid4().hex[:10]}")
    finally:
        await database.dispose()
    return Tenant(server.base_url, made.name, made.admin_key)


@pytest.fixture
def proxy(server: Served) -> Iterator[tuple[Proxy, str]]:
    with serve(server.base_url) as running:
        yield running
