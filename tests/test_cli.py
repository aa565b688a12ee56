"""The operator interface (DESIGN: a contract that scripts outside this repo depend on)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
from typer.testing import CliRunner

from tenantplane.cli import app as cli
from tenantplane.db.engine import Database
from tests.conftest import TEST_SECRET
from tests.http_client import bearer


def run(database_url: str, *args: str) -> str:
    env = {"TENANTPLANE_DATABASE_URL": database_url, "TENANTPLANE_SECRET_KEY": TEST_SECRET}
    result = CliRunner().invoke(cli, list(args), env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_tenant_create_json_prints_exactly_the_documented_object(
    database: Database, database_url: str
) -> None:
    output = run(
        database_url,
        "tenant",
        "create",
        "acme",
        "--plan",
        "pro",
        "--admin-email",
        "Ops@Example.com",
        "--json",
    )
    document = json.loads(output)
    assert document["tenant"] == {
        "name": "acme",
        "plan": "pro",
        "enforceMetricsLimit": False,
        "enforceLogLimit": False,
    }
    assert set(document["apiKey"]) == {"id", "key", "role", "displayName"}
    assert document["apiKey"]["id"].startswith("ak-")
    assert document["apiKey"]["key"].startswith("svc_")
    assert document["apiKey"]["role"] == "admin"
    assert document["apiKey"]["displayName"] == "bootstrap"


async def test_bootstrap_key_lists_itself_over_http(
    database: Database, database_url: str, client: httpx.AsyncClient
) -> None:
    # The CLI runs its own event loop, as it does from a shell.
    output = await asyncio.to_thread(
        run, database_url, "tenant", "create", "acme", "--admin-email", "a@example.com", "--json"
    )
    document = json.loads(output)
    response = await client.get("/tenants/acme/apikeys", headers=bearer(document["apiKey"]["key"]))
    assert response.status_code == 200
    [key] = response.json()["items"]
    assert key["id"] == document["apiKey"]["id"]
    assert key["displayName"] == "bootstrap"
    assert key["createdBy"] == "a@example.com"


def test_duplicate_and_invalid_tenants_fail_cleanly(database: Database, database_url: str) -> None:
    env = {"TENANTPLANE_DATABASE_URL": database_url, "TENANTPLANE_SECRET_KEY": TEST_SECRET}
    run(database_url, "tenant", "create", "acme")
    duplicate = CliRunner().invoke(cli, ["tenant", "create", "acme"], env=env)
    assert duplicate.exit_code == 1
    assert "already exists" in duplicate.output
    invalid = CliRunner().invoke(cli, ["tenant", "create", "Not_Valid"], env=env)
    assert invalid.exit_code == 1
    bad_plan = CliRunner().invoke(cli, ["tenant", "create", "acme2", "--plan", "gold"], env=env)
    assert bad_plan.exit_code == 2
    listed = json.loads(run(database_url, "tenant", "list", "--json"))
    assert [tenant["name"] for tenant in listed] == ["acme"]


def test_tenant_update_and_list(database: Database, database_url: str) -> None:
    run(database_url, "tenant", "create", "beta")
    run(database_url, "tenant", "create", "alpha")
    updated = json.loads(
        run(
            database_url,
            "tenant",
            "update",
            "beta",
            "--plan",
            "business",
            "--enforce-metrics-limit",
            "--no-enforce-log-limit",
            "--json",
        )
    )
    assert updated == {
        "name": "beta",
        "plan": "business",
        "enforceMetricsLimit": True,
        "enforceLogLimit": False,
    }
    listed = json.loads(run(database_url, "tenant", "list", "--json"))
    assert [tenant["name"] for tenant in listed] == ["alpha", "beta"]
    assert listed[1]["plan"] == "business"
    assert "alpha" in run(database_url, "tenant", "list")


def test_migrate_is_idempotent(database: Database, database_url: str) -> None:
    run(database_url, "migrate")
    run(database_url, "migrate")


def test_installed_entry_point_runs(tmp_path: Path) -> None:
    """The real console script, against a fresh SQLite database it migrates itself."""
    env = {
        **os.environ,
        "TENANTPLANE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}",
        "TENANTPLANE_SECRET_KEY_FILE": str(tmp_path / "secret.key"),
    }
    env.pop("TENANTPLANE_SECRET_KEY", None)
    executable = Path(sys.executable).parent / "tenantplane"
    subprocess.run([executable, "migrate"], env=env, check=True, capture_output=True)
    created = subprocess.run(
        [executable, "tenant", "create", "fresh", "--json"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    assert json.loads(created.stdout)["tenant"]["name"] == "fresh"
    # The generated hashing key is kept private on disk.
    assert (tmp_path / "secret.key").stat().st_mode & 0o077 == 0
