"""What tpctl prints is text: server strings are never read as Rich markup, and every
command's help renders."""

from __future__ import annotations

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from tenantplane_client.cli import app
from tests.clients.conftest import Run, ok
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
