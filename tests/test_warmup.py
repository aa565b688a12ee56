"""The one-time work of a fresh process is done at startup, not by its first requests.

Measured in a new interpreter, as a server starts: in this one, earlier tests have already
imported every module and configured every mapper.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from fastapi import FastAPI

from tests.conftest import TEST_SECRET, make_settings
from tests.factories import Factory
from tests.http_client import running_app

FIRST_REQUESTS = """
import asyncio, json, sys

import fastapi.routing
import httpx
from sqlalchemy import event
from sqlalchemy.orm import Mapper

from tenantplane.app import serving_app
from tenantplane.catalogue.plans import load_plans
from tenantplane.config import Settings

config = json.loads(sys.argv[1])

# The framework's analysis of a route (its parameters and dependencies), counted.
analysed = []
analyse = fastapi.routing.get_dependant
fastapi.routing.get_dependant = lambda **options: analysed.append(1) or analyse(**options)


async def main() -> None:
    app = serving_app(Settings(_env_file=None, **config["settings"]))
    async with app.router.lifespan_context(app):
        modules = set(sys.modules)
        plans_read = load_plans.cache_info().misses
        routes_analysed = len(analysed)
        configured = []
        event.listen(Mapper, "before_configured", lambda: configured.append(True))
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": "Bearer " + config["key"]}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://testserver/api/v1", headers=headers
        ) as client:
            clusters = config["path"] + "/clusters"
            statuses = [
                (await client.post(clusters, json={"name": "first"})).status_code,
                (await client.get(clusters + "/first")).status_code,
                (await client.get(clusters)).status_code,
                (await client.get(config["path"] + "/secrets/none")).status_code,
                (await client.get("/plans")).status_code,
            ]
    print(json.dumps({
        "statuses": statuses,
        "imported": sorted(set(sys.modules) - modules),
        "mappers_configured": len(configured),
        "plans_read": load_plans.cache_info().misses - plans_read,
        "routes_analysed": len(analysed) - routes_analysed,
    }))


asyncio.run(main())
"""


RECONCILERS_BUILT = """
import json, sys

from sqlalchemy import event
from sqlalchemy.orm import Mapper, configure_mappers

from tenantplane.config import Settings
from tenantplane.db.engine import Database
from tenantplane.reconcilers import build_supervisor

settings = Settings(_env_file=None, **json.loads(sys.argv[1]))
build_supervisor(settings, Database.from_settings(settings))
configured = []
event.listen(Mapper, "before_configured", lambda: configured.append(True))
configure_mappers()
print(json.dumps({"mappers_configured": len(configured)}))
"""


def _run_fresh(script: str, config: Mapping[str, object]) -> dict[str, object]:
    """``script``'s last line of output (JSON), run by a new interpreter."""
    run = subprocess.run(
        [sys.executable, "-c", script, json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    outcome: dict[str, object] = json.loads(run.stdout.splitlines()[-1])
    return outcome


def _settings(database_url: str, tmp_path: Path) -> dict[str, object]:
    return {
        "database_url": database_url,
        "secret_key": TEST_SECRET,
        "secret_key_file": str(tmp_path / "secret.key"),
    }


async def test_first_requests_import_configure_and_read_nothing(
    database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    # The reconcilers' own first looks would import and read in the background.
    settings = {
        **_settings(database_url, tmp_path),
        "run_reconcilers": False,
        # Its SDK is imported by whoever builds the payment provider first.
        "billing_provider": "paddle",
        "paddle_api_key": "pdl_test_key",
    }
    config = {"settings": settings, "key": tenant.admin_key, "path": tenant.path}
    outcome = _run_fresh(FIRST_REQUESTS, config)
    assert outcome["statuses"] == [201, 200, 200, 404, 200]
    assert outcome["imported"] == []
    assert outcome["mappers_configured"] == 0
    assert outcome["plans_read"] == 0
    # Analysed by the server before it starts, not by the first request to each router.
    assert outcome["routes_analysed"] == 0


async def test_route_templates_are_indexed_at_startup(database_url: str, tmp_path: Path) -> None:
    async with running_app(make_settings(database_url, tmp_path)) as app:
        # Already built: building again, even from no routes, answers the startup's index.
        index = app.state.route_templates.build(FastAPI())
    assert index
    assert "/api/v1/tenants/{tenant}/clusters" in index.values()


def test_reconcilers_are_built_with_every_mapper_configured(
    database_url: str, tmp_path: Path
) -> None:
    """A worker's first look does not configure the models either."""
    outcome = _run_fresh(RECONCILERS_BUILT, _settings(database_url, tmp_path))
    assert outcome == {"mappers_configured": 0}
