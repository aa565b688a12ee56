"""What tpctl prints is text: server strings are never read as Rich markup, and every
command's help renders."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from typer.core import TyperGroup
from typer.testing import CliRunner

from tenantplane_client.cli import app
from tests.clients.conftest import TPCTL, Run, Tenant, ok, tpctl_environment
from tests.clients.proxy import Fault, Proxy

# Rich markup a server string may carry: a closing tag with no opening one (MarkupError),
# a terminal hyperlink, a style.
HOSTILE = ("[/]", "[link=https://evil.example]x[/link]", "[bold red]loud[/]")


def command_paths() -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = []

    def walk(command: object, path: tuple[str, ...]) -> None:
        paths.append(path)
        if isinstance(command, TyperGroup):
            for name, sub in sorted(command.commands.items()):
                walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return paths


def test_the_walk_reaches_nested_commands() -> None:
    paths = command_paths()
    assert ("secrets", "create") in paths
    assert ("alerting", "receivers", "put") in paths
    assert len(paths) > 50


@pytest.mark.parametrize("path", command_paths(), ids=" ".join)
def test_every_commands_help_renders(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "120"})
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


WIDE = {"COLUMNS": "400"}


def test_server_strings_in_tables_are_text(tpctl: Run) -> None:
    ids = [
        ok(tpctl("apikeys", "create", "--name", name, "--role", "readonly"))["id"]
        for name in HOSTILE
    ]
    table = tpctl("apikeys", "list", "-o", "table", env=WIDE)
    assert table.returncode == 0, table.stderr
    for name in HOSTILE:
        assert name in table.stdout
    one = tpctl("apikeys", "get", ids[1], "-o", "table", env=WIDE)
    assert one.returncode == 0, one.stderr
    assert HOSTILE[1] in one.stdout


def test_server_strings_in_errors_are_text(tpctl: Run, proxy: tuple[Proxy, str]) -> None:
    fake, url = proxy
    for code in HOSTILE:
        fake.inject(Fault(409, code=code))
        refused = tpctl("clusters", "list", env={"TPCTL_URL": url, **WIDE})
        assert refused.returncode == 5, refused.stderr
        assert f"Error: 409 conflict {code}: injected" in refused.stderr


def test_names_in_tpctls_own_messages_are_text(tpctl: Run) -> None:
    for name in HOSTILE:
        saved = tpctl("config", "set-profile", name, "--tenant", "t", env=WIDE)
        assert saved.returncode == 0, saved.stderr
        assert f"Profile {name} saved" in saved.stderr
        unknown = tpctl("config", "use", f"no{name}", env=WIDE)
        assert unknown.returncode == 3, unknown.stderr
        assert f"no profile 'no{name}'" in unknown.stderr


def test_clusters_update_changes_the_version_or_the_resources(tpctl: Run) -> None:
    """PATCH takes a version and resources (a resize), so update offers and says both."""
    shown = CliRunner().invoke(app, ["clusters", "update", "--help"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "only field" not in shown.output
    for option in ("--version", "--cpu", "--memory", "--storage"):
        assert option in shown.output
    assert "resources" in shown.output
    create = CliRunner().invoke(app, ["clusters", "create", "--help"], env={"COLUMNS": "200"})
    assert create.output.count("quantity") == 3, create.output
    small = ("--cpu", "1", "--memory", "1Gi", "--storage", "1Gi")
    created = ok(tpctl("clusters", "create", "web", *small))
    resized = ok(tpctl("clusters", "update", "web", "--cpu", "2", "--storage", "2Gi"))
    assert resized["resources"] == {"cpu": "2", "memory": "1Gi", "storage": "2Gi"}
    assert resized["version"] == created["version"]
    assert ok(tpctl("clusters", "get", "web"))["resources"]["cpu"] == "2"
    nothing = tpctl("clusters", "update", "web")
    assert nothing.returncode == 2
    assert "--version" in nothing.stderr
    assert ok(tpctl("clusters", "get", "web"))["resources"] == resized["resources"]


def _output_help(path: tuple[str, ...]) -> str:
    command: Any = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    option = next(param for param in command.params if param.name == "output")
    return str(option.help)


def _on_a_terminal(tpctl_env: dict[str, str], *args: str) -> str:
    """What tpctl prints when its standard output is a terminal (a pseudo-terminal here)."""
    leader, follower = os.openpty()
    try:
        done = subprocess.run(
            [TPCTL, *args], env=tpctl_env, stdout=follower, stderr=subprocess.PIPE, check=False
        )
        os.close(follower)
        assert done.returncode == 0, done.stderr
        chunks = []
        while chunk := _read(leader):
            chunks.append(chunk)
        # Without the styles' escape sequences (a table's header is bold).
        return re.sub(r"\x1b\[[0-9;]*m", "", b"".join(chunks).decode())
    finally:
        os.close(leader)


def _read(descriptor: int) -> bytes:
    try:
        return os.read(descriptor, 65536)
    except OSError:  # the terminal's other end is closed: all was read
        return b""


def test_the_output_help_names_the_default_each_command_uses(tenant: Tenant, home: Path) -> None:
    """The alerting sections and config view print YAML on a terminal, the rest a table: each
    command's --output help says which."""
    environment = {**tpctl_environment(tenant, home), "COLUMNS": "200"}
    nested = _on_a_terminal(environment, "alerting", "global", "get")
    assert isinstance(yaml.safe_load(nested), dict), nested
    assert _output_help(("alerting", "global", "get")).startswith("yaml (default on a terminal)")
    assert _on_a_terminal(environment, "config", "view").startswith("path: ")
    assert _output_help(("config", "view")).startswith("yaml (default on a terminal)")
    listed = _on_a_terminal(environment, "versions", "list")
    assert listed.split()[:2] == ["VERSION", "KUBERNETESVERSION"], listed
    assert _output_help(("versions", "list")).startswith("table (default on a terminal)")
    yaml_by_default = {
        path
        for path in command_paths()
        if path and path[0] in ("alerting", "config") and path[-1] in ("get", "put", "apply")
    } | {("alerting", "config"), ("config", "view")}
    for path in command_paths():
        try:
            said = _output_help(path)
        except (AttributeError, StopIteration):  # a group, or no --output
            continue
        expected = "yaml" if path in yaml_by_default else "table"
        assert said.startswith(f"{expected} (default on a terminal)"), (path, said)
