"""The worked examples of the feature docs run as they are written.

Convention: in README.md and docs/*.md, a line ``<!-- example: NAME -->`` directly above a
```` ```sh ```` fence marks that block as runnable; unmarked blocks are not run. Every marked
block runs here, and every name has checks below (a marker without them fails), so a
documented command that stops working (a renamed field, a changed path, a new required
setting) fails the suite.

Each block runs as a reader would run it: ``bash`` with ``set -euo pipefail``, from the
repository root, against a real ``tenantplane serve`` process with the embedded defaults
(SQLite, the simulator, the database alerting backend, no payment provider), after the
README's first steps: the tenant ``acme`` made by ``tenantplane tenant create acme
--admin-email a@example.com``, its bootstrap admin key in ``KEY``, and the cluster ``dev``
of the README's cluster example, Running. The docs write the service's address as
``http://127.0.0.1:8080`` (where ``make serve`` listens); the test puts its server's
address in its place. Operator commands (``uv run tenantplane …``) see the server's
settings, as in the shell of the operator who started it. Blocks use ``curl -f``, so an
HTTP error ends them; after each, the state it should have left is checked through the API.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.contract.server import TENANTPLANE, server_env, serving

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTED_ADDRESS = "http://127.0.0.1:8080"
_MARKER = re.compile(r"^<!-- example: (?P<name>[^ ]*) -->\n", re.MULTILINE)
_BLOCK = re.compile(r"```sh\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)
# A generous bound: on a loaded machine a block takes a few seconds; reaching it means a
# block hangs (a poll that never ends), which must fail rather than stall the suite.
BLOCK_DEADLINE_SECONDS = 300.0
CLUSTER_DEADLINE_SECONDS = 60.0


def marked_blocks() -> dict[str, str]:
    """Every marked block of the README and docs, by name; a marker not directly above a
    ```` ```sh ```` fence, or a name used twice, is an error of the document."""
    blocks: dict[str, str] = {}
    for document in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = document.read_text(encoding="utf-8")
        for marker in _MARKER.finditer(text):
            name, where = marker["name"], f"{document.relative_to(ROOT)}: example {marker['name']}"
            block = _BLOCK.match(text, marker.end())
            assert block is not None, f"{where}: the marker is not directly above a ```sh block"
            assert name not in blocks, f"{where}: the name is used twice"
            blocks[name] = block["body"]
    return blocks


@dataclass(frozen=True)
class Acme:
    """The README's first steps, done on a real server."""

    base_url: str
    key: str
    # The test's whole environment: never shown in a failure's report.
    env: dict[str, str] = field(repr=False)

    @property
    def api(self) -> str:
        return f"{self.base_url}/api/v1/tenants/acme"

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.api, headers={"Authorization": f"Bearer {self.key}"}, timeout=30
        )


@pytest.fixture(scope="module")
def acme(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Acme]:
    directory = tmp_path_factory.mktemp("docs-examples")
    env = {**server_env(directory), "TENANTPLANE_DATA_DIR": str(directory / "data")}
    with serving(env, directory / "server.log") as base_url:
        # The README's first steps (`uv run tenantplane …` is this executable).
        readme = ["tenant", "create", "acme", "--admin-email", "a@example.com", "--json"]
        created = subprocess.run(
            [TENANTPLANE, *readme], env=env, capture_output=True, text=True, check=True
        )
        tenant = Acme(base_url, json.loads(created.stdout)["apiKey"]["key"], env)
        _create_dev_cluster(tenant)
        yield tenant


def _create_dev_cluster(acme: Acme) -> None:
    """The README's cluster example: `dev`, polled to Running."""
    with acme.client() as api:
        body = {
            "name": "dev",
            "version": "1.33",
            "resources": {"cpu": "2", "memory": "4Gi", "storage": "20Gi"},
        }
        assert api.post("/clusters", json=body).status_code == 201
        give_up = time.monotonic() + CLUSTER_DEADLINE_SECONDS
        while (phase := api.get("/clusters/dev").json()["status"]["phase"]) != "Running":
            assert time.monotonic() < give_up, f"cluster dev still {phase}"
            time.sleep(0.1)  # polling a condition with a deadline


def run_block(acme: Acme, body: str) -> str:
    """The block under bash, as the reader runs it; its standard output."""
    assert DOCUMENTED_ADDRESS in body, f"the block does not name the service ({body!r})"
    script = "set -euo pipefail\n" + body.replace(DOCUMENTED_ADDRESS, acme.base_url)
    # `uv run` must not sync the environment other tests are running from.
    env = {**acme.env, "KEY": acme.key, "UV_NO_SYNC": "1"}
    result = subprocess.run(
        ["bash", "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=BLOCK_DEADLINE_SECONDS,
        check=False,
    )
    assert result.returncode == 0, (
        f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    )
    return result.stdout


def _etag(response: httpx.Response) -> int:
    assert response.status_code == 200, response.text
    return int(response.headers["ETag"].strip('"'))


# Each example: what to note before the block, and what to check after it (given the note
# and the block's output).
Before = Callable[[httpx.Client], Any]
After = Callable[[httpx.Client, Any, str], None]


def _secrets_before(api: httpx.Client) -> None:
    assert api.get("/secrets/db-creds").status_code == 404


def _secrets_after(api: httpx.Client, _: None, output: str) -> None:
    # The block polls the secret to Synced (and exits 1 if it never is), then deletes it.
    lines = output.splitlines()
    assert "Synced" in lines, output
    assert "dev default db-creds Synced" in lines, output
    assert api.get("/secrets/db-creds").status_code == 404
    assert api.get("/secrets").json()["items"] == []


def _alerting_before(api: httpx.Client) -> int:
    return _etag(api.get("/alerting/config"))


def _alerting_after(api: httpx.Client, version: int, output: str) -> None:
    lines = output.splitlines()
    assert f'ETag: "{version + 3}"' in lines, output
    assert lines[-1] == "412", output
    config = api.get("/alerting/config")
    # Four writes changed it: the receiver, the route, the template and the root route
    # under If-Match; the stale If-Match after them changed nothing.
    assert _etag(config) == version + 4
    document = config.json()
    receivers = {receiver["name"]: receiver for receiver in document["receivers"]}
    assert receivers["team-hook"]["webhook_configs"][0]["url"] == "https://hooks.example.com/alerts"
    assert document["route"]["receiver"] == "default"
    assert document["route"]["group_wait"] == "30s"
    assert [route["receiver"] for route in document["route"]["routes"]] == ["team-hook"]
    assert '{{ define "acme.title" }}' in document["templates"]["acme.tmpl"]


def _members_before(api: httpx.Client) -> tuple[int, list[dict[str, str]]]:
    members = api.get("/members")
    return _etag(members), members.json()["items"]


def _members_after(
    api: httpx.Client, before: tuple[int, list[dict[str, str]]], output: str
) -> None:
    version, items = before
    assert "LAST_ADMIN" in output, output
    assert output.splitlines()[-1] == "409", output
    members = api.get("/members")
    # Three changes (add, role change, removal); the refused demotion changed nothing.
    assert _etag(members) == version + 3
    assert members.json()["items"] == items == [{"email": "a@example.com", "role": "admin"}]
    assert api.get("/members/bea@example.com").status_code == 404


def _billing_before(api: httpx.Client) -> None:
    assert api.get("/invoices").json()["items"] == []


def _billing_after(api: httpx.Client, _: None, output: str) -> None:
    # The first period, from the tenant's creation to the end of the month (two, should
    # the month end while the test runs); the block read the last one back by its name.
    items = api.get("/invoices").json()["items"]
    assert items, output
    invoice = items[-1]
    assert invoice["name"].startswith("acme-")
    # No payment provider: issued, not charged.
    assert {item["status"]["phase"] for item in items} == {"Draft"}
    status = invoice["status"]
    read = f"{invoice['name']} Draft {status['total']} {status['currency']}"
    assert read in output.splitlines(), output
    cpu = [item for item in invoice["status"]["lineItems"] if item["kind"] == "cpu"]
    assert [item["cluster"] for item in cpu] == ["dev"]
    # The quantity, not the amount: minutes of a cluster may round to 0.00.
    assert Decimal(cpu[0]["quantity"]) > 0


EXAMPLES: dict[str, tuple[Before, After]] = {
    "secrets": (_secrets_before, _secrets_after),
    "alerting": (_alerting_before, _alerting_after),
    "members": (_members_before, _members_after),
    "billing": (_billing_before, _billing_after),
}


def test_every_marked_block_has_checks() -> None:
    assert sorted(marked_blocks()) == sorted(EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_documented_example_runs(acme: Acme, name: str) -> None:
    blocks = marked_blocks()
    assert name in blocks, f"no block is marked <!-- example: {name} -->"
    before, after = EXAMPLES[name]
    with acme.client() as api:
        noted = before(api)
        output = run_block(acme, blocks[name])
        after(api, noted, output)


def test_the_examples_are_checked_with_bash_strict_mode(acme: Acme) -> None:
    # Guards the harness: a failing command in the middle of a block fails the block.
    with pytest.raises(AssertionError, match="exit 22"):
        run_block(acme, f'curl -fsS "{DOCUMENTED_ADDRESS}/api/v1/tenants/acme/nothing"\necho ok')
