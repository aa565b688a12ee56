"""The Go client (clients/go): its own tests, a cluster's life against a real server, and its
generated code against docs/openapi.json. Needs Go (make test-terraform)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.clients.conftest import Tenant
from tests.terraform.conftest import go_environment

pytestmark = pytest.mark.terraform

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "clients" / "go"
GENERATED = MODULE / "api.gen.go"
MODULE_PATH = "github.com/tenantplane/tenantplane/clients/go"
FENCED_GO = re.compile(r"^```go\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def go(
    *args: str, env: dict[str, str] | None = None, cwd: Path = MODULE
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["nice", "-n", "10", "go", *args],
        cwd=cwd,
        env=env or go_environment(),
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_go_clients_own_tests_pass() -> None:
    """Vet, and the retry rules against httptest servers (faults no real server makes)."""
    vetted = go("vet", "./...")
    assert vetted.returncode == 0, vetted.stdout + vetted.stderr
    tested = go("test", "-count=1", "./...")
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_a_cluster_life_against_a_real_server(tenant: Tenant) -> None:
    """Versions and plans, a cluster created (POST with the client's Idempotency-Key), read,
    a 404 as *APIError, an update with If-Match, a stale ETag's 412, deletion."""
    ran = go(
        "test",
        "-tags",
        "integration",
        "-run",
        "^TestIntegration",
        "-count=1",
        "-v",
        ".",
        env=go_environment(
            TENANTPLANE_URL=tenant.url,
            TENANTPLANE_TENANT=tenant.name,
            TENANTPLANE_API_KEY=tenant.key,
        ),
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "--- PASS: TestIntegrationClusterLifecycle" in ran.stdout


def test_the_example_in_docs_clients_md_runs(tenant: Tenant, tmp_path: Path) -> None:
    """The Go program in docs/clients.md, built as a module of its own that requires the
    client (replaced by this checkout's), runs as written against a real server."""
    (example,) = FENCED_GO.findall((ROOT / "docs" / "clients.md").read_text())
    (tmp_path / "main.go").write_text(example)
    (tmp_path / "go.mod").write_text(
        f"module example.test/clients-doc\n\ngo 1.26\n\n"
        f"require {MODULE_PATH} v0.0.0\n\nreplace {MODULE_PATH} => {MODULE}\n"
    )
    shutil.copy(MODULE / "go.sum", tmp_path / "go.sum")
    # Its requirements completed as a user's `go mod tidy` completes them, from the module
    # proxy: tidy reads the go.mod of every module in the graph, test-only ones too (such as
    # go-jsonmerge's github.com/RaveNoX/go-jsoncommentstrip), which no build of the client
    # downloads. With the proxy off, a cold module cache failed here.
    tidied = go("mod", "tidy", cwd=tmp_path, env=go_environment(GOFLAGS="-mod=mod"))
    assert tidied.returncode == 0, tidied.stderr
    ran = go(
        "run",
        ".",
        cwd=tmp_path,
        env=go_environment(
            TENANTPLANE_URL=tenant.url,
            TENANTPLANE_TENANT=tenant.name,
            TENANTPLANE_API_KEY=tenant.key,
        ),
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[-1] == "no cluster web"
    assert sum(line.endswith("default: true") for line in lines) == 1


def test_the_generated_code_is_current(tmp_path: Path) -> None:
    """CI fails when docs/openapi.json changed and clients/go/api.gen.go was not regenerated
    (`make go-client`), as tests/clients/test_sdk.py does for the Python SDK."""
    fresh = tmp_path / "api.gen.go"
    made = subprocess.run(
        ["make", "-s", "go-client", f"GO_CLIENT_OUTPUT={fresh}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    # Compared as a flag: a diff of two 1.6 MB files would bury the message.
    current = fresh.read_bytes() == GENERATED.read_bytes()
    assert current, (
        "clients/go/api.gen.go differs from what docs/openapi.json gives: run `make go-client`"
    )
