"""Billing fixtures: the loopback fake of Paddle, apps configured for it, the operator CLI."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from typer.testing import CliRunner, Result

from tenantplane.cli import app as cli_app
from tenantplane.config import Settings
from tenantplane.db.base import utcnow
from tenantplane.db.engine import Database
from tests.conftest import TEST_SECRET, make_settings
from tests.factories import Factory
from tests.fakes.paddle import FakePaddle
from tests.http_client import api_client, running_app

DEADLINE_SECONDS = 30

# A plan catalogue with simple prices, the same on every plan, so that amounts can be
# computed by hand (limits generous enough never to matter here).
TEST_PRICES = """
defaults:
  resources: {{cpu: "1", memory: 2Gi, storage: 10Gi}}
plans:
{plans}
"""
PLAN_PRICES = """  {name}:
    limits: {{clusters: 100, cpu: "1000", memory: 1Ti, storage: 10Ti}}
    prices:
      currency: EUR
      platformFee: "30.00"
      vcpuHour: "0.0400"
      memoryGibHour: "0.0050"
      storageGibHour: "0.0002"
      haControlPlaneHour: "0.1000"
      observability:
        metrics: {{unit: "million samples", price: "0.2000", included: "50"}}
"""


@pytest.fixture
def plans_file(tmp_path: Path) -> Path:
    path = tmp_path / "plans.yaml"
    plans = "".join(
        PLAN_PRICES.format(name=name) for name in ("starter", "pro", "business", "enterprise")
    )
    path.write_text(TEST_PRICES.format(plans=plans), encoding="utf-8")
    return path


@pytest.fixture
def paddle() -> Iterator[FakePaddle]:
    fake = FakePaddle().start()
    yield fake
    fake.stop()


def paddle_overrides(paddle: FakePaddle) -> dict[str, Any]:
    return {
        "billing_provider": "paddle",
        "paddle_api_url": paddle.url,
        "paddle_api_key": paddle.api_key,
        "paddle_webhook_secret": paddle.webhook_secret,
        "paddle_timeout_seconds": 1.0,
        # Wider than Paddle's 5 s so a loaded test machine's scheduling never decides a
        # test; the window itself is tested with timestamps ten minutes off.
        "paddle_webhook_tolerance_seconds": 300,
    }


@dataclass
class Billing:
    """A deployment under test: its settings, an HTTP client and the operator CLI."""

    settings: Settings
    app: FastAPI
    client: httpx.AsyncClient
    env: dict[str, str]

    async def invoke(self, *args: str) -> Result:
        # The CLI runs its own event loop, as it does from a shell.
        return await asyncio.to_thread(CliRunner().invoke, cli_app, list(args), env=self.env)

    async def cli(self, *args: str, expect: int = 0) -> str:
        result = await self.invoke(*args)
        assert result.exit_code == expect, result.output
        return result.stdout if expect == 0 else result.output

    async def cli_json(self, *args: str, expect: int = 0) -> Any:
        """The command with --json: its one JSON document on stdout (the error, on failure)."""
        result = await self.invoke(*args, "--json")
        assert result.exit_code == expect, result.output
        return json.loads(result.stdout)

    async def run(self, now: str) -> dict[str, Any]:
        output = await self.cli("billing", "run", "--now", now, "--json")
        document: dict[str, Any] = json.loads(output)
        return document

    async def run_process(self, now: str) -> dict[str, Any]:
        """`billing run` as a separate process (CliRunner swaps sys.stdout: one at a time)."""
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tenantplane",
            "billing",
            "run",
            "--now",
            now,
            "--json",
            env={**os.environ, **self.env},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await process.communicate()
        assert process.returncode == 0, stderr.decode()
        document: dict[str, Any] = json.loads(stdout)
        return document

    async def wait_for(
        self, path: str, headers: dict[str, str], ready: Callable[[dict[str, Any]], bool]
    ) -> dict[str, Any]:
        """Poll a resource until ``ready`` (asynchronous reconcilers); fail after a deadline."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEADLINE_SECONDS
        while True:
            response = await self.client.get(path, headers=headers)
            if response.status_code == 200 and ready(response.json()):
                document: dict[str, Any] = response.json()
                return document
            assert loop.time() < deadline, f"{path} never became ready: {response.text}"
            await asyncio.sleep(0.05)


def cli_env(settings: Settings) -> dict[str, str]:
    env = {"TENANTPLANE_DATABASE_URL": settings.database_url, "TENANTPLANE_SECRET_KEY": TEST_SECRET}
    names = {
        "plans_file": "TENANTPLANE_PLANS_FILE",
        "usage_source": "TENANTPLANE_USAGE_SOURCE",
        "usage_file": "TENANTPLANE_USAGE_FILE",
        "billing_provider": "TENANTPLANE_BILLING_PROVIDER",
        "paddle_api_url": "TENANTPLANE_PADDLE_API_URL",
        "paddle_timeout_seconds": "TENANTPLANE_PADDLE_TIMEOUT_SECONDS",
    }
    for field, variable in names.items():
        value = getattr(settings, field)
        if value is not None:
            env[variable] = str(value)
    for field, variable in {
        "paddle_api_key": "TENANTPLANE_PADDLE_API_KEY",
        "paddle_webhook_secret": "TENANTPLANE_PADDLE_WEBHOOK_SECRET",
    }.items():
        secret = getattr(settings, field)
        if secret is not None:
            env[variable] = secret.get_secret_value()
    return env


BillingFactoryFn = Callable[..., Awaitable[Billing]]


@pytest.fixture
async def billing(
    database: Database, database_url: str, tmp_path: Path, factory: Factory, plans_file: Path
) -> AsyncIterator[BillingFactoryFn]:
    """``await billing(**settings)``: an app and CLI sharing the test database. Reconcilers
    are off unless asked for (the CLI is then the only actor, as in a cron-driven setup);
    the billing-cycle schedule is parked so that no run happens behind the test's back."""
    await factory.billing.billing_schedule(None)
    stack: list[Any] = []

    async def start(**overrides: Any) -> Billing:
        values: dict[str, Any] = {"run_reconcilers": False, "plans_file": plans_file}
        values.update(overrides)
        settings = make_settings(database_url, tmp_path, **values)
        app_context = running_app(settings)
        app: FastAPI = await app_context.__aenter__()
        client_context = api_client(app)
        client = await client_context.__aenter__()
        stack.append((client_context, app_context))
        return Billing(settings, app, client, cli_env(settings))

    yield start
    for client_context, app_context in reversed(stack):
        await client_context.__aexit__(None, None, None)
        await app_context.__aexit__(None, None, None)


def now_iso() -> str:
    return utcnow().isoformat().replace("+00:00", "Z")
