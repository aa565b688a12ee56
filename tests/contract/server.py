"""A real `tenantplane serve` process on a loopback port with its own SQLite database,
and a tenant with an admin key made by the operator command."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import TEST_SECRET

TENANTPLANE = str(Path(sys.executable).parent / "tenantplane")
START_DEADLINE_SECONDS = 60.0


@dataclass(frozen=True)
class Served:
    base_url: str
    tenant: str
    admin_key: str
    admin_key_id: str
    log: Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def server_env(tmp_path: Path, database_url: str | None = None) -> dict[str, str]:
    """A server's environment: ``database_url``, or SQLite in ``tmp_path``."""
    return {
        **os.environ,
        "TENANTPLANE_DATABASE_URL": database_url
        or f"sqlite+aiosqlite:///{tmp_path / 'tenantplane.db'}",
        "TENANTPLANE_SECRET_KEY": TEST_SECRET,
        "TENANTPLANE_RATE_LIMIT": "1000000/minute",
        # A fuzzer's deliberate auth failures must not block its own later requests.
        "TENANTPLANE_AUTH_FAILURE_THRESHOLD": "1000000",
        "TENANTPLANE_SIMULATOR_STEP_SECONDS": "0.05",
    }


def wait_until_serving(
    base_url: str,
    process: subprocess.Popen[bytes],
    log: Path,
    deadline: float = START_DEADLINE_SECONDS,
) -> None:
    give_up = time.monotonic() + deadline
    while time.monotonic() < give_up:
        if process.poll() is not None:
            pytest.fail(f"the server exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            if httpx.get(f"{base_url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)  # polling a condition with a deadline
    pytest.fail(f"the server did not start within {deadline:.0f}s")


def create_tenant(env: dict[str, str], name: str) -> tuple[str, str]:
    result = subprocess.run(
        [TENANTPLANE, "tenant", "create", name, "--plan", "enterprise", "--json"],
        env=env,
        capture_output=True,
        check=True,
    )
    created = json.loads(result.stdout)
    return created["apiKey"]["key"], created["apiKey"]["id"]


@contextmanager
def served(
    tmp_path: Path, tenant: str = "contract", extra_env: Mapping[str, str] | None = None
) -> Iterator[Served]:
    """``extra_env`` adds settings (e.g. a vault) to the server's and the operator's environment."""
    env = {**server_env(tmp_path), **(extra_env or {})}
    log = tmp_path / "server.log"
    with serving(env, log) as base_url:
        key, key_id = create_tenant(env, tenant)
        yield Served(base_url, tenant, key, key_id, log)


@contextmanager
def serving(
    env: Mapping[str, str], log: Path, *, port: int | None = None, **popen: Any
) -> Iterator[str]:
    """`tenantplane serve` with ``env`` on loopback ``port`` (a free one by default), its
    output in ``log``, until the block ends; yields its base URL once it answers."""
    port = port or free_port()
    base_url = f"http://127.0.0.1:{port}"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [TENANTPLANE, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            **popen,
        )
        try:
            wait_until_serving(base_url, process, log)
            yield base_url
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
