"""scripts/test-deps: the suite's services are there before any test runs, or the run stops
at once with the one thing to do (never test after test failing to connect)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.contract.server import free_port

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "test-deps"


def run_test_deps(**variables: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **variables}
    return subprocess.run([str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120)


def test_this_machines_services_are_there() -> None:
    done = run_test_deps()
    assert done.returncode == 0, done.stderr
    assert "everything the tests need is here" in done.stdout


@pytest.mark.parametrize(
    ("variable", "url", "what"),
    [
        (
            "TENANTPLANE_TEST_POSTGRES_URL",
            "postgresql://postgres@127.0.0.1:{port}/test",
            "PostgreSQL",
        ),
        ("TENANTPLANE_TEST_REDIS_URL", "redis://127.0.0.1:{port}/0", "Redis"),
        ("TENANTPLANE_TEST_REDIS_URL", "redis://[::1]:{port}/0", "Redis"),
    ],
)
def test_a_service_of_ones_own_that_does_not_answer_stops_the_run_naming_it(
    variable: str, url: str, what: str
) -> None:
    port = free_port()
    done = run_test_deps(**{variable: url.format(port=port)})
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert f"{what} at " in line
    assert f":{port} ({variable}) is not reachable" in line
    assert f"unset {variable}" in line
