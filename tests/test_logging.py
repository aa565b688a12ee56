"""Every line a real `tenantplane serve` or `migrate` writes to stderr is one JSON object:
our events and the records of uvicorn, Alembic and SQLAlchemy alike (docs/operations.md)."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog
from sqlalchemy.engine import make_url

from tenantplane.db.engine import Database
from tenantplane.logging import configure_logging
from tests.contract.server import (
    START_DEADLINE_SECONDS,
    TENANTPLANE,
    free_port,
    server_env,
    wait_until_serving,
)
from tests.timestamps import RFC3339_UTC

PASSWORD = "never-in-a-log-line"


def json_lines(text: str) -> list[dict[str, Any]]:
    """Each line parsed; fails on the first line that is not a JSON log record."""
    records = []
    for line in text.splitlines():
        record = json.loads(line)
        assert isinstance(record, dict), line
        assert {"event", "level", "logger", "timestamp"} <= set(record), line
        assert RFC3339_UTC.fullmatch(record["timestamp"]), line
        records.append(record)
    return records


def with_password(url: str) -> str:
    """PostgreSQL URLs carry a password (ignored by the test server's trust authentication)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        return url
    return parsed.set(password=PASSWORD).render_as_string(hide_password=False)


def send_garbage(port: int) -> bytes:
    """Bytes that are no HTTP request: uvicorn answers 400 and logs a warning of its own."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        answer = b""
        while chunk := connection.recv(4096):
            answer += chunk
    return answer


def until_logged(log: Path, text: str) -> None:
    give_up = time.monotonic() + START_DEADLINE_SECONDS
    while text not in log.read_text(errors="replace"):
        if time.monotonic() > give_up:
            pytest.fail(f"{text} not logged: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.05)  # polling a condition with a deadline


def test_serve_logs_json_lines_from_start_to_shutdown(
    database: Database, database_url: str, tmp_path: Path
) -> None:
    env = {**server_env(tmp_path), "TENANTPLANE_DATABASE_URL": with_password(database_url)}
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    stdout, stderr = tmp_path / "stdout", tmp_path / "stderr"
    with stdout.open("wb") as out, stderr.open("wb") as err:
        process = subprocess.Popen(
            [TENANTPLANE, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=err,
        )
        try:
            wait_until_serving(base_url, process, stderr)
            assert httpx.get(f"{base_url}/healthz").status_code == 200
            assert send_garbage(port).startswith(b"HTTP/1.1 400")
            # With several processes (PostgreSQL's default), the first may answer before
            # the supervisor has seen them all serve and logged the start.
            until_logged(stderr, '"server started"')
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)

    assert stdout.read_text() == ""
    logged = stderr.read_text()
    records = json_lines(logged)
    assert PASSWORD not in logged
    by_logger = {record["logger"] for record in records}
    assert "alembic.runtime.migration" in by_logger  # serve migrates first
    assert not any(name.startswith("sqlalchemy") for name in by_logger)  # never SQL
    uvicorn_events = [r["event"] for r in records if r["logger"] == "uvicorn.error"]
    assert any(event.startswith("Started server process") for event in uvicorn_events)
    assert "Invalid HTTP request received." in uvicorn_events  # was plain text on stderr
    assert "Shutting down" in uvicorn_events

    # One access record per request: the app's `request` event, not uvicorn's line too.
    assert "uvicorn.access" not in by_logger
    [health] = [r for r in records if r["event"] == "request" and r["path"] == "/healthz"]
    assert health["status"] == 200
    assert health["request_id"]

    events = [record["event"] for record in records]
    [started] = [record for record in records if record["event"] == "server started"]
    assert started["address"] == base_url
    assert started["database_kind"] == make_url(database_url).get_backend_name()
    assert started["orchestrator"] == "simulator"
    assert started["alerting_backend"] == "database"
    assert started["billing_provider"] == "none"
    assert events.index("Shutting down") < events.index("server stopped")


def test_migrate_logs_alembic_records_as_json_and_prints_its_result(tmp_path: Path) -> None:
    database = tmp_path / "fresh.db"
    env = {
        **os.environ,
        "TENANTPLANE_DATABASE_URL": f"sqlite:///{database}",
        "TENANTPLANE_SECRET_KEY_FILE": str(tmp_path / "secret.key"),
    }
    env.pop("TENANTPLANE_LOG_JSON", None)
    result = subprocess.run(
        [TENANTPLANE, "migrate", "--json"], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "database": f"sqlite+aiosqlite:///{database}",
        "upToDate": True,
    }
    records = json_lines(result.stderr)
    migrations = [r for r in records if r["logger"] == "alembic.runtime.migration"]
    assert any(r["event"].startswith("Running upgrade") for r in migrations)
    assert {r["level"] for r in migrations} == {"info"}
    assert not any(r["logger"].startswith("sqlalchemy") for r in records)


class Unencodable:
    def __repr__(self) -> str:
        return "<unencodable>"


def test_our_events_are_json_lines_on_the_stderr_of_the_moment(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Rendered by structlog and written to the redirected stream, with the keys the
    standard library's records carry; below the level, nothing; a value JSON cannot
    encode, its repr; an integer beyond 64 bits as it is; an exception, its traceback."""
    configure_logging("INFO", json=True)
    log = structlog.get_logger("tenantplane.example")
    with structlog.contextvars.bound_contextvars(request_id="r-1"):
        log.debug("below the level")
        log.info("happened", count=3, at=datetime(2026, 11, 27, tzinfo=UTC), odd=Unencodable())
        log.info("huge", value=2**70)
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("failed")
    # A logger of its own: a library's may have been configured by an earlier test not to
    # reach the root logger (uvicorn's default logging configuration, in tests/fakes).
    logging.getLogger("tests.logging.library").warning("from the standard library")

    records = json_lines(capsys.readouterr().err)
    events = [r["event"] for r in records]
    assert events == ["happened", "huge", "failed", "from the standard library"]
    happened, huge, failed, foreign = records
    assert happened["logger"] == "tenantplane.example"
    assert happened["level"] == "info"
    assert happened["request_id"] == "r-1"
    assert (happened["count"], happened["odd"]) == (3, "<unencodable>")
    assert happened["at"].startswith("2026-11-27T00:00:00")
    assert huge["value"] == 2**70
    assert failed["level"] == "error"
    assert "ValueError: boom" in failed["exception"]
    assert (foreign["logger"], foreign["level"]) == ("tests.logging.library", "warning")


def on_a_terminal(
    arguments: list[str],
    env: dict[str, str],
    meanwhile: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> tuple[int, str, str]:
    """Runs ``tenantplane`` with its stderr a pseudo-terminal, as in an operator's shell, and
    its stdout a pipe (``meanwhile`` is given the process while it runs): exit code, stdout
    and what the terminal showed, lines ending in \\n."""
    controller, terminal = os.openpty()
    try:
        process = subprocess.Popen(
            [TENANTPLANE, *arguments], env=env, stdout=subprocess.PIPE, stderr=terminal
        )
    finally:
        os.close(terminal)
    shown: list[bytes] = []

    def read() -> None:
        # Read as it comes: a full terminal buffer would block the process's writes.
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the process's side of the terminal is closed
                return
            if not chunk:
                return
            shown.append(chunk)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        if meanwhile is not None:
            meanwhile(process)
        assert process.stdout is not None
        stdout = process.stdout.read().decode()
        code = process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.join(timeout=60)
        os.close(controller)
    return code, stdout, b"".join(shown).decode().replace("\r\n", "\n")


def migrate_env(tmp_path: Path, **settings: str) -> dict[str, str]:
    env = {
        **os.environ,
        "TENANTPLANE_DATABASE_URL": f"sqlite:///{tmp_path / 'fresh.db'}",
        "TENANTPLANE_SECRET_KEY_FILE": str(tmp_path / "secret.key"),
        **settings,
    }
    for name in ("TENANTPLANE_LOG_JSON", "TENANTPLANE_LOG_FORMAT", "NO_COLOR"):
        if name not in settings:
            env.pop(name, None)
    return env


def test_a_terminal_is_shown_readable_coloured_lines_and_the_result_alone_on_stdout(
    tmp_path: Path,
) -> None:
    code, stdout, shown = on_a_terminal(["migrate"], migrate_env(tmp_path))
    assert code == 0, shown
    assert stdout == "database schema is up to date\n"
    lines = shown.splitlines()
    assert any("Running upgrade" in line and "alembic.runtime.migration" in line for line in lines)
    assert not any(line.lstrip().startswith("{") for line in lines), shown
    assert "\x1b[" in shown  # coloured: a terminal


def test_log_format_json_keeps_json_lines_on_a_terminal(tmp_path: Path) -> None:
    env = migrate_env(tmp_path, TENANTPLANE_LOG_FORMAT="json")
    code, stdout, shown = on_a_terminal(["migrate"], env)
    assert code == 0, shown
    assert stdout == "database schema is up to date\n"
    records = json_lines(shown)
    assert any(r["event"].startswith("Running upgrade") for r in records)


@pytest.mark.parametrize(
    "settings", [{"TENANTPLANE_LOG_FORMAT": "console"}, {"TENANTPLANE_LOG_JSON": "false"}]
)
def test_log_format_console_elsewhere_is_readable_lines_without_colour(
    tmp_path: Path, settings: dict[str, str]
) -> None:
    """Asked for (LOG_JSON=false is the earlier spelling) with stderr not a terminal: no
    escape sequences in a file."""
    done = subprocess.run(
        [TENANTPLANE, "migrate"],
        env=migrate_env(tmp_path, **settings),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Running upgrade" in done.stderr
    assert not any(line.startswith("{") for line in done.stderr.splitlines())
    assert "\x1b[" not in done.stderr


def test_serve_json_logs_json_lines_on_a_terminal_whatever_the_setting(tmp_path: Path) -> None:
    port = free_port()
    env = {**server_env(tmp_path), "TENANTPLANE_LOG_FORMAT": "console"}
    env.pop("TENANTPLANE_LOG_JSON", None)

    def stop_once_serving(process: subprocess.Popen[bytes]) -> None:
        wait_until_serving(f"http://127.0.0.1:{port}", process, tmp_path / "none")
        process.send_signal(signal.SIGTERM)

    code, stdout, shown = on_a_terminal(
        ["serve", "--port", str(port), "--json"], env, stop_once_serving
    )
    assert code == 0, shown
    assert stdout == ""
    events = [record["event"] for record in json_lines(shown)]
    assert "server started" in events
    assert "server stopped" in events
