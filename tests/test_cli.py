"""The operator interface (docs/design.md: a contract that scripts outside this repo depend on)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import httpx
from typer.testing import CliRunner, Result

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
    assert invalid.exit_code == 2
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


def invoke(database_url: str, *args: str, **extra_env: str) -> Result:
    env = {
        "TENANTPLANE_DATABASE_URL": database_url,
        "TENANTPLANE_SECRET_KEY": TEST_SECRET,
        **extra_env,
    }
    return CliRunner().invoke(cli, list(args), env=env)


def test_version_prints_the_package_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"tenantplane {version('tenantplane')}"


def test_help_has_no_bool_metavar() -> None:
    result = CliRunner().invoke(cli, ["tenant", "update", "--help"])
    assert result.exit_code == 0
    assert "--no-enforce-log-limit" in result.stdout
    assert "<bool>" not in result.stdout


def test_unknown_tenant_is_refused_with_exit_1_in_text_and_json(
    database: Database, database_url: str
) -> None:
    text = invoke(database_url, "tenant", "update", "ghost", "--plan", "pro")
    assert text.exit_code == 1
    assert text.stderr.strip().startswith("error: ")
    assert "ghost" in text.stderr
    as_json = invoke(database_url, "tenant", "update", "ghost", "--plan", "pro", "--json")
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["error"]["code"] == "NOT_FOUND"


def test_update_with_nothing_to_change_says_so_and_changes_nothing(
    database: Database, database_url: str
) -> None:
    run(database_url, "tenant", "create", "acme", "--plan", "pro")
    result = invoke(database_url, "tenant", "update", "acme", "--json")
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"] == {
        "code": "NOTHING_TO_CHANGE",
        "message": "nothing to change: give --plan, --[no-]enforce-metrics-limit "
        "or --[no-]enforce-log-limit",
    }
    [tenant] = json.loads(run(database_url, "tenant", "list", "--json"))
    assert tenant["plan"] == "pro"


def test_update_prints_a_sentence_not_a_dict(database: Database, database_url: str) -> None:
    run(database_url, "tenant", "create", "acme")
    output = run(database_url, "tenant", "update", "acme", "--plan", "business")
    assert output.strip() == (
        "tenant acme updated: plan business, enforceMetricsLimit False, enforceLogLimit False"
    )


def test_a_bad_setting_names_its_environment_variable(tmp_path: Path) -> None:
    result = invoke(
        f"sqlite+aiosqlite:///{tmp_path / 'x.db'}", "tenant", "list", TENANTPLANE_LOG_JSON="maybe"
    )
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: TENANTPLANE_LOG_JSON: ")
    assert "Traceback" not in result.output


def test_unreachable_database_is_one_line_and_exit_3() -> None:
    url = "postgresql://nobody:secret-password@127.0.0.1:1/none"
    text = invoke(url, "tenant", "list")
    assert text.exit_code == 3
    [line] = text.stderr.strip().splitlines()
    assert "127.0.0.1:1" in line
    assert "TENANTPLANE_DATABASE_URL" in line
    assert "secret-password" not in line
    as_json = invoke(url, "migrate", "--json")
    assert as_json.exit_code == 3
    assert json.loads(as_json.stdout)["error"]["code"] == "UNAVAILABLE"


def test_debug_shows_the_failure_itself() -> None:
    result = invoke("postgresql://nobody@127.0.0.1:1/none", "--debug", "tenant", "list")
    assert result.exit_code != 3
    assert result.exception is not None
    assert (
        "Connection refused" in str(result.exception)
        or "connection" in str(result.exception).lower()
    )


def test_simulator_show_of_an_unknown_cluster_is_refused_like_other_unknowns(
    database: Database, database_url: str
) -> None:
    run(database_url, "tenant", "create", "acme")
    result = invoke(database_url, "simulator", "show", "acme", "nope")
    assert result.exit_code == 1
    assert result.stderr.strip() == "error: no cluster nope in tenant acme"


def test_default_paths_do_not_depend_on_the_current_directory(tmp_path: Path) -> None:
    """Run from two directories: one database under XDG_DATA_HOME, nothing in either cwd."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("TENANTPLANE_") and key != "XDG_DATA_HOME"
    }
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    executable = Path(sys.executable).parent / "tenantplane"
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    subprocess.run([executable, "migrate"], env=env, cwd=first, check=True, capture_output=True)
    subprocess.run(
        [executable, "tenant", "create", "acme"],
        env=env,
        cwd=first,
        check=True,
        capture_output=True,
    )
    listed = subprocess.run(
        [executable, "tenant", "list", "--json"],
        env=env,
        cwd=second,
        check=True,
        capture_output=True,
        text=True,
    )
    assert [tenant["name"] for tenant in json.loads(listed.stdout)] == ["acme"]
    assert (tmp_path / "xdg" / "tenantplane" / "tenantplane.db").exists()
    assert (tmp_path / "xdg" / "tenantplane" / "secret.key").exists()
    assert list(first.iterdir()) == []
    assert list(second.iterdir()) == []


def test_serve_prints_where_it_listens_and_what_it_uses(tmp_path: Path) -> None:
    env = {**os.environ, "TENANTPLANE_DATA_DIR": str(tmp_path / "data")}
    env.pop("TENANTPLANE_DATABASE_URL", None)
    executable = Path(sys.executable).parent / "tenantplane"
    process = subprocess.Popen(
        [executable, "serve", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
    finally:
        process.terminate()
        process.wait(timeout=30)
    data = tmp_path / "data"
    assert line == (
        f"tenantplane listening on http://127.0.0.1:0 data dir {data}"
        f" database sqlite+aiosqlite:///{data / 'tenantplane.db'}"
        " orchestrator simulator alerting database billing none"
    )
