"""`serve` and `worker` refuse real charges (Paddle) for clusters only the simulator runs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.contract.server import TENANTPLANE, free_port, server_env, wait_until_serving

PADDLE = {
    "TENANTPLANE_BILLING_PROVIDER": "paddle",
    "TENANTPLANE_PADDLE_API_KEY": "pdl_test_key",
    "TENANTPLANE_PADDLE_WEBHOOK_SECRET": "pdl_ntfset_test",
}


@pytest.mark.parametrize("command", [["serve", "--port", "1"], ["worker"]])
def test_paddle_with_the_simulator_is_refused_as_a_setting_error(
    tmp_path: Path, command: list[str]
) -> None:
    env = {**server_env(tmp_path), **PADDLE}
    result = subprocess.run(
        [TENANTPLANE, *command], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "TENANTPLANE_BILLING_PROVIDER=paddle" in line
    assert "TENANTPLANE_ORCHESTRATOR=simulator" in line
    assert "TENANTPLANE_ALLOW_SIMULATED_BILLING=true" in line
    # Refused before anything was done: not even the database was created.
    assert not (tmp_path / "tenantplane.db").exists()


def test_paddle_with_the_simulator_json_error_has_its_code(tmp_path: Path) -> None:
    env = {**server_env(tmp_path), **PADDLE}
    result = subprocess.run(
        [TENANTPLANE, "worker", "--json"], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert json.loads(result.stdout)["error"]["code"] == "SIMULATED_BILLING"


def test_allowing_simulated_billing_starts_and_says_so_in_the_log(tmp_path: Path) -> None:
    env = {
        **server_env(tmp_path),
        **PADDLE,
        "TENANTPLANE_ALLOW_SIMULATED_BILLING": "true",
        "TENANTPLANE_LOG_JSON": "true",
    }
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [TENANTPLANE, "serve", "--port", str(port)], env=env, stdout=output, stderr=output
        )
        try:
            base_url = f"http://127.0.0.1:{port}"
            wait_until_serving(base_url, process, log)
            assert httpx.get(f"{base_url}/healthz").status_code == 200
        finally:
            process.terminate()
            process.wait(timeout=30)
    records = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    [warning] = [record for record in records if record["event"].startswith("simulated billing")]
    assert warning["level"] == "warning"
    assert warning["setting"] == "TENANTPLANE_ALLOW_SIMULATED_BILLING"
    assert warning["orchestrator"] == "simulator"
