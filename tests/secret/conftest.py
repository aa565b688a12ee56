"""Secrets tests: reconcilers run in the app and resync quickly; a fake vault on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tenantplane.config import Settings
from tenantplane.db.engine import Database
from tests.conftest import make_settings
from tests.fakes.vault import FakeVault, serve
from tests.http_client import api_client, running_app

# Short enough that tests see ClusterDeleted, a path appearing, a cluster becoming Running
# within a fraction of a second; nothing is asserted about timing.
FAST: dict[str, Any] = {
    "secret_resync_seconds": 0.1,
    "secret_retry_seconds": 0.1,
    "reconcile_idle_poll_seconds": 0.1,
}


@pytest.fixture
def settings(database: Database, database_url: str, tmp_path: Path) -> Settings:
    return make_settings(database_url, tmp_path, **FAST)


@pytest.fixture
def vault() -> Iterator[tuple[FakeVault, str]]:
    fake = FakeVault()
    with serve(fake) as address:
        yield fake, address


@pytest.fixture
async def vault_client(
    database: Database, database_url: str, tmp_path: Path, vault: tuple[FakeVault, str]
) -> AsyncIterator[httpx.AsyncClient]:
    """The API with the fake vault configured (its right token)."""
    fake, address = vault
    settings = make_settings(
        database_url, tmp_path, vault_addr=address, vault_token=fake.token, **FAST
    )
    async with running_app(settings) as app, api_client(app) as client:
        yield client
