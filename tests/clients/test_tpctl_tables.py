"""tpctl's tables on a narrow terminal: what a later command needs whole (an ID, a name, an
email, a raw key, a link) is never cut, shortened with an ellipsis or folded across lines;
the other columns give way."""

from __future__ import annotations

import re
from pathlib import Path

from tests.clients.conftest import Run, ok

NARROW = {"COLUMNS": "60"}
SMALL = ("--cpu", "1", "--memory", "1Gi", "--storage", "1Gi")


def table(tpctl: Run, *args: str) -> str:
    shown = tpctl(*args, "-o", "table", env=NARROW)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip(), shown.stderr
    return str(shown.stdout)


def test_ids_names_and_emails_are_whole_in_a_narrow_table(tpctl: Run) -> None:
    key = ok(tpctl("apikeys", "create", "--name", "a-rather-long-display-name", "--role", "admin"))
    assert key["id"] in table(tpctl, "apikeys", "list")
    assert key["id"] in table(tpctl, "apikeys", "get", key["id"])
    # The ID read from the table is the one the other commands take.
    listed_id = re.search(r"ak-\S+", table(tpctl, "apikeys", "list"))
    assert listed_id is not None
    assert ok(tpctl("apikeys", "get", listed_id.group(0)))["id"] == listed_id.group(0)

    email = "someone.with.a.long.address@subdomain.example.com"
    ok(tpctl("members", "create", email, "--role", "readonly"))
    assert email in table(tpctl, "members", "list")

    name = "a-cluster-whose-name-is-long-enough"
    ok(tpctl("clusters", "create", name, *SMALL))
    assert name in table(tpctl, "clusters", "list")
    assert name in table(tpctl, "clusters", "get", name)
    ok(tpctl("secrets", "create", "database-credentials-for-prod", "--path", "apps/db/prod"))
    assert "database-credentials-for-prod" in table(tpctl, "secrets", "list")


def test_the_raw_key_printed_once_is_whole_in_a_narrow_table(tpctl: Run) -> None:
    created = table(tpctl, "apikeys", "create", "--name", "ci", "--role", "readonly")
    printed = re.search(r"svc_\S+", created)
    assert printed is not None, created
    # It authenticates: nothing of it was cut.
    assert ok(tpctl("tenant", "get", env={"TPCTL_API_KEY": printed.group(0)}))["name"]


def test_messages_on_standard_error_are_not_folded(tpctl: Run, home: Path) -> None:
    """A path or name in a message is copied from the terminal: the terminal wraps it, tpctl
    does not break it with a newline."""
    name = "a-profile-whose-name-is-long-enough-to-pass-the-width"
    saved = tpctl("config", "set-profile", name, "--tenant", "t", env=NARROW)
    assert saved.returncode == 0, saved.stderr
    path = home / ".config" / "tpctl" / "config.yaml"
    assert saved.stderr == f"Profile {name} saved in {path}\n"
    missing = tpctl("clusters", "get", name, env=NARROW)
    assert missing.returncode == 4
    assert missing.stderr == "Error: 404 not_found NOT_FOUND: cluster not found\n"
    unknown = tpctl("config", "use", f"{name}-and-more", env=NARROW)
    assert unknown.returncode == 3
    assert len(unknown.stderr.splitlines()) == 1, unknown.stderr


def test_the_routes_table_shows_the_index_the_route_commands_take(tpctl: Run) -> None:
    for name in ("team-a", "team-b"):
        ok(tpctl("alerting", "receivers", "put", name, "-f", "-", "-o", "json", stdin="{}"))
    for index, name in enumerate(("team-a", "team-b")):
        route = f'{{"receiver": "{name}", "matchers": ["team=\\"{name}\\""]}}'
        ok(tpctl("alerting", "routes", "put", str(index), "-f", "-", "-o", "json", stdin=route))
    lines = table(tpctl, "alerting", "routes", "list").splitlines()
    assert lines[0].split()[:2] == ["INDEX", "RECEIVER"], lines
    shown = {line.split()[0]: line.split()[1] for line in lines[1:]}
    assert shown == {"0": "team-a", "1": "team-b"}
    for shown_index, receiver in shown.items():
        got = ok(tpctl("alerting", "routes", "get", shown_index, "-o", "json"))
        assert got["receiver"] == receiver
    # JSON stays the API's list, without the index.
    assert [set(item) for item in ok(tpctl("alerting", "routes", "list"))] == [
        {"receiver", "matchers"},
        {"receiver", "matchers"},
    ]
