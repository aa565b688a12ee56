"""`tenantplane serve` as a real process: an address it cannot listen on is one line naming
the way out, before anything is migrated; SIGTERM and SIGINT end it with exit status 0 after
its graceful shutdown, also under `make serve` (README, "Operating it")."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.contract.server import TENANTPLANE, free_port, server_env, wait_until_serving

ROOT = Path(__file__).resolve().parents[1]
EXIT_USAGE, EXIT_UNAVAILABLE = 2, 3


@contextmanager
def occupied_port() -> Iterator[int]:
    """A port of 127.0.0.1 another program listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def serve(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TENANTPLANE, "serve", *arguments],
        env=server_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_port_in_use_is_one_line_naming_the_option_and_nothing_is_migrated(
    tmp_path: Path,
) -> None:
    with occupied_port() as port:
        done = serve(tmp_path, "--host", "127.0.0.1", "--port", str(port))
        as_json = serve(tmp_path, "--port", str(port), "--json")

    assert done.returncode == EXIT_UNAVAILABLE, done.stderr
    assert done.stdout == ""
    assert done.stderr == (
        f"error: 127.0.0.1:{port} is already in use; choose another port with --port N "
        "(make serve PORT=N)\n"
    )
    assert as_json.returncode == EXIT_UNAVAILABLE, as_json.stderr
    assert json.loads(as_json.stdout)["error"]["code"] == "ADDRESS_IN_USE"
    # Refused before the migration: the database was not even created.
    assert not (tmp_path / "tenantplane.db").exists()


@pytest.mark.parametrize(
    ("host", "problem"),
    [
        # TEST-NET-1 (RFC 5737): never an address of this machine.
        ("192.0.2.1", "is not an address of this machine; choose another with --host"),
        ("no-such-host.invalid", "is not a known host name; choose another with --host"),
    ],
)
def test_a_host_that_cannot_be_listened_on_is_a_usage_error(
    tmp_path: Path, host: str, problem: str
) -> None:
    done = serve(tmp_path, "--host", host, "--port", str(free_port()))
    assert done.returncode == EXIT_USAGE, done.stderr
    assert done.stderr.startswith(f"error: cannot listen on {host}: "), done.stderr
    assert done.stderr.endswith(f"{problem}\n"), done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert not (tmp_path / "tenantplane.db").exists()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_serve_with_exit_status_0_after_its_graceful_shutdown(
    tmp_path: Path, signum: signal.Signals
) -> None:
    port = free_port()
    stderr = tmp_path / "stderr"
    with stderr.open("wb") as err:
        process = subprocess.Popen(
            [TENANTPLANE, "serve", "--port", str(port)],
            env=server_env(tmp_path),
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        try:
            wait_until_serving(f"http://127.0.0.1:{port}", process, stderr)
        finally:
            process.send_signal(signum)
            code = process.wait(timeout=60)
    logged = stderr.read_text()
    assert code == 0, logged
    events = [json.loads(line)["event"] for line in logged.splitlines()]
    assert events.index("Shutting down") < events.index("server stopped")
    assert "Aborted" not in logged


def test_make_serve_ends_without_an_error_when_the_server_is_sent_sigterm(
    tmp_path: Path,
) -> None:
    """`make serve` (its installation step left out: it would take the development tools out
    of the environment the tests run in) with the server process stopped, as a service
    manager or `kill` stops it: make exits 0 and reports no error (it said "Error 143")."""
    port = free_port()
    stderr = tmp_path / "stderr"
    with stderr.open("wb") as err:
        make = subprocess.Popen(
            ["make", "-C", str(ROOT), "-o", "install-runtime", "serve", f"PORT={port}"],
            env=server_env(tmp_path),
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
        try:
            wait_until_serving(f"http://127.0.0.1:{port}", make, stderr)
            started = re.search(r"Started server process \[(\d+)\]", stderr.read_text())
            assert started is not None, stderr.read_text()
            server = int(started.group(1))
            assert server != make.pid
            os.kill(server, signal.SIGTERM)
            code = make.wait(timeout=60)
        finally:
            if make.poll() is None:
                os.killpg(make.pid, signal.SIGKILL)
                make.wait()
    logged = stderr.read_text()
    assert code == 0, logged
    assert "make: ***" not in logged
    assert "server stopped" in logged
