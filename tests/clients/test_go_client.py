"""The Go client (clients/go): its own tests, a cluster's life against a real server, and its
generated code against docs/openapi.json. Needs Go (make test-terraform)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.clients.conftest import Tenant

pytestmark = pytest.mark.terraform

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "clients" / "go"
GENERATED = MODULE / "api.gen.go"
# Go's caches are the test bed's (scripts/testbed), never in the tree.
CACHE = Path(os.environ.get("TENANTPLANE_TESTBED_CACHE", "/var/cache/tenantplane-testbed"))


def go_environment(**extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "GOMODCACHE": str(CACHE / "go" / "mod"),
        "GOCACHE": str(CACHE / "go" / "build"),
        "GOFLAGS": "-mod=readonly",
        **extra,
    }


def go(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["nice", "-n", "10", "go", *args],
        cwd=MODULE,
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
    assert fresh.read_text() == GENERATED.read_text(), (
        "clients/go/api.gen.go differs from what docs/openapi.json gives: run `make go-client`"
    )
