"""CORS: off by default; with TENANTPLANE_CORS_ORIGINS, exactly those origins may call the API
from a browser, reading the headers a client needs (issue 35, contract items)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from tenantplane.config import Settings
from tenantplane.db.engine import Database
from tests.conftest import make_settings
from tests.factories import Factory
from tests.http_client import api_client, bearer, running_app

CONSOLE = "https://console.example.com"


def preflight(origin: str, method: str, headers: str) -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": headers,
    }


async def test_cors_is_off_by_default(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    answer = await client.get(
        f"{tenant.path}/clusters", headers={**bearer(tenant.admin_key), "Origin": CONSOLE}
    )
    assert answer.status_code == 200
    assert "access-control-allow-origin" not in answer.headers


async def test_a_listed_origin_may_call_the_api_and_read_its_headers(
    database: Database, database_url: str, tmp_path: Path, factory: Factory
) -> None:
    settings = make_settings(
        database_url, tmp_path, cors_origins=f"{CONSOLE},http://localhost:3000"
    )
    tenant = await factory.tenant()
    async with running_app(settings) as app, api_client(app) as client:
        asked = await client.options(
            f"{tenant.path}/clusters/dev",
            headers=preflight(CONSOLE, "PATCH", "authorization,if-match,content-type"),
        )
        assert asked.status_code == 200
        assert asked.headers["access-control-allow-origin"] == CONSOLE
        assert "PATCH" in asked.headers["access-control-allow-methods"]
        allowed = asked.headers["access-control-allow-headers"].lower()
        assert {"authorization", "if-match", "idempotency-key"} <= set(allowed.split(", "))
        assert "access-control-allow-credentials" not in asked.headers

        answer = await client.get(
            f"{tenant.path}/clusters", headers={**bearer(tenant.admin_key), "Origin": CONSOLE}
        )
        assert answer.headers["access-control-allow-origin"] == CONSOLE
        exposed = answer.headers["access-control-expose-headers"]
        for header in ("ETag", "Location", "Retry-After", "RateLimit-Remaining"):
            assert header in exposed
        # A refusal carries them too: a browser application can read why.
        refused = await client.get(f"{tenant.path}/clusters", headers={"Origin": CONSOLE})
        assert refused.status_code == 401
        assert refused.headers["access-control-allow-origin"] == CONSOLE

        other = await client.options(
            f"{tenant.path}/clusters",
            headers=preflight("https://evil.example.net", "GET", "authorization"),
        )
        assert other.status_code == 400
        assert "access-control-allow-origin" not in other.headers


@pytest.mark.parametrize(
    "origins",
    ["*", "https://console.example.com/", "https://*.example.com", "ftp://x", "HTTPS://A.example"],
)
def test_only_exact_origins_are_accepted(origins: str, tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="not an origin"):
        Settings(_env_file=None, data_dir=tmp_path, cors_origins=[origins])
