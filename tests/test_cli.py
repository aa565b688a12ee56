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
import pytest
import typer
from typer.core import TyperCommand, TyperGroup, TyperOption
from typer.testing import CliRunner, Result

from tenantplane.cli import app as cli
from tenantplane.db.engine import Database
from tests.conftest import TEST_SECRET
from tests.http_client import bearer
from tests.timestamps import RFC3339_UTC


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
        "state": "active",
    }
    # The API's representation of a created key (POST …/apikeys), raw key included.
    api_key = document["apiKey"]
    assert set(api_key) == {"id", "key", "role", "displayName", "createdAt", "createdBy"}
    assert api_key["id"].startswith("ak-")
    assert api_key["key"].startswith("svc_")
    assert api_key["role"] == "admin"
    assert api_key["displayName"] == "bootstrap"
    assert api_key["createdBy"] == "ops@example.com"
    assert RFC3339_UTC.fullmatch(api_key["createdAt"]), api_key["createdAt"]


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
    created = {name: value for name, value in document["apiKey"].items() if name != "key"}
    # The same fields with the same values, as the API writes them.
    assert {name: key[name] for name in created} == created


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
        "state": "active",
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


def leaf_commands() -> dict[str, TyperCommand]:
    """Every command an operator can run, by its full name (`tenant create`, …)."""
    found: dict[str, TyperCommand] = {}

    def walk(command: object, path: tuple[str, ...]) -> None:
        if isinstance(command, TyperGroup):
            for name, sub in command.commands.items():
                walk(sub, (*path, name))
        else:
            assert isinstance(command, TyperCommand)
            found[" ".join(path)] = command

    walk(typer.main.get_command(cli), ())
    return found


def test_the_command_list_is_complete() -> None:
    # Guards the enumeration below: a refactoring that hid a command group would pass it.
    assert set(leaf_commands()) == {
        "migrate",
        "serve",
        "worker",
        "tenant create",
        "tenant update",
        "tenant list",
        "tenant suspend",
        "tenant resume",
        "tenant cancel",
        "tenant credit",
        "apikey create",
        "member add",
        "simulator fail-replica",
        "simulator recover",
        "simulator show",
        "billing run",
        "billing link",
        "alerting set-credentials",
        "alerting clear-credentials",
        "alerting show-credentials",
        "alerting sync",
        "alerting check",
        "keys rotate",
        "events verify",
        "events export",
        "console-login",
        "doctor",
    }


@pytest.mark.parametrize("name", sorted(leaf_commands()))
def test_every_command_accepts_json(name: str) -> None:
    command = leaf_commands()[name]
    [option] = [param for param in command.params if "--json" in param.opts]
    assert isinstance(option, TyperOption)
    assert option.is_flag, f"{name}: --json takes no value"
    result = CliRunner().invoke(cli, [*name.split(), "--help"])
    assert result.exit_code == 0, result.output
    assert "--json" in result.stdout


@pytest.mark.parametrize("name", sorted(leaf_commands()))
def test_help_has_no_bool_metavar(name: str) -> None:
    result = CliRunner().invoke(cli, [*name.split(), "--help"])
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.stdout
    assert "BOOLEAN" not in result.stdout


def test_tenant_update_help_shows_both_forms_of_its_flags() -> None:
    result = CliRunner().invoke(cli, ["tenant", "update", "--help"])
    assert "--enforce-metrics-limit / --no-enforce-metrics-limit" in result.stdout
    assert "--enforce-log-limit / --no-enforce-log-limit" in result.stdout


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


@pytest.mark.parametrize(
    ("variable", "value"), [("TENANTPLANE_LOG_JSON", "maybe"), ("TENANTPLANE_LOG_FORMAT", "xml")]
)
def test_a_bad_setting_names_its_environment_variable(
    tmp_path: Path, variable: str, value: str
) -> None:
    result = invoke(
        f"sqlite+aiosqlite:///{tmp_path / 'x.db'}", "tenant", "list", **{variable: value}
    )
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {variable}: ")
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
