from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tenantplane.db.engine import Database
from tests.conftest import make_settings
from tests.http_client import api_client, running_app


@pytest.fixture
async def paused_client(
    database: Database, database_url: str, tmp_path: Path
) -> AsyncIterator[httpx.AsyncClient]:
    """The API with no reconcilers: clusters stay where the request path left them."""
    settings = make_settings(database_url, tmp_path, run_reconcilers=False)
    async with running_app(settings) as app, api_client(app) as client:
        yield client
