"""Tenant lifecycle fixtures: an app and the operator command sharing the test database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from tenantplane.cli import app as cli_app
from tenantplane.config import Settings
from tenantplane.db.engine import Database
from tests.billing.conftest import cli_env
from tests.conftest import make_settings
from tests.http_client import api_client, running_app


@dataclass
class Operated:
    """The API (ASGI, lifespan included) and the operator CLI on the same database."""

    settings: Settings
    client: httpx.AsyncClient
    env: dict[str, str]

    async def cli(self, *args: str, expect: int = 0) -> str:
        # The CLI runs its own event loop, as it does from a shell.
        result = await asyncio.to_thread(CliRunner().invoke, cli_app, list(args), env=self.env)
        assert result.exit_code == expect, result.output
        return result.stdout if expect == 0 else result.output


async def operated(database_url: str, tmp_path: Path, **overrides: Any) -> AsyncIterator[Operated]:
    settings = make_settings(database_url, tmp_path, **overrides)
    async with running_app(settings) as app, api_client(app) as client:
        yield Operated(settings, client, cli_env(settings))


@pytest.fixture
async def deployment(
    database: Database, database_url: str, tmp_path: Path
) -> AsyncIterator[Operated]:
    """Reconcilers off: the request path and the operator are the only actors."""
    async for value in operated(database_url, tmp_path, run_reconcilers=False):
        yield value
