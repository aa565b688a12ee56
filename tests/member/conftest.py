"""What the member tests share: an app that accepts the mock provider's id tokens."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tenantplane.db.engine import Database
from tests.conftest import make_settings
from tests.http_client import api_client, running_app
from tests.oidc_provider import MockProvider


@pytest.fixture
async def oidc_client(
    database: Database, database_url: str, tmp_path: Path, oidc_provider: MockProvider
) -> AsyncIterator[httpx.AsyncClient]:
    settings = make_settings(
        database_url,
        tmp_path,
        oidc_issuer=oidc_provider.issuer,
        oidc_audience=oidc_provider.audience,
    )
    async with running_app(settings) as app, api_client(app) as http:
        yield http
