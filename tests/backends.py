"""The real databases and Redis the tests run against.

PostgreSQL and Redis are taken from TENANTPLANE_TEST_POSTGRES_URL / TENANTPLANE_TEST_REDIS_URL
(default: the services on this machine). Each test run creates and drops its own databases.
A missing service fails its tests with the command that provides it (`scripts/test-deps
--services`): a run that skipped half the suite must not pass.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
import redis
from sqlalchemy.engine import make_url

POSTGRES_URL = os.environ.get(
    "TENANTPLANE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("TENANTPLANE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
INSTALL_SERVICES = "sudo scripts/test-deps"
INSTALL_TOOLS = "sudo scripts/test-deps"


def unavailable(what: str, error: Exception) -> None:
    pytest.fail(f"{what} is not reachable: {error}; run: {INSTALL_SERVICES}", pytrace=False)


def _admin_dsn() -> str:
    return make_url(POSTGRES_URL).set(drivername="postgresql").render_as_string(hide_password=False)


@contextmanager
def postgres_database(prefix: str = "tenantplane_test") -> Iterator[str]:
    """A fresh PostgreSQL database for this run; yields its psycopg URL; dropped after."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(_admin_dsn(), autocommit=True, connect_timeout=5)
    except psycopg.Error as exc:
        unavailable("PostgreSQL", exc)
        raise
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        url = make_url(POSTGRES_URL).set(drivername="postgresql+psycopg", database=name)
        yield url.render_as_string(hide_password=False)
    finally:
        with psycopg.connect(_admin_dsn(), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def sqlite_database(directory: Path) -> Iterator[str]:
    yield f"sqlite+aiosqlite:///{directory / 'tenantplane.db'}"


def redis_url() -> str:
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        unavailable("Redis", exc)
    return REDIS_URL


class DedicatedRedis:
    """A redis-server process of the test's own on a loopback port, to make unreachable
    (``kill``: connections refused; ``freeze``: connections accepted, never answered) and
    bring back on the same port (``start``, ``thaw``)."""

    def __init__(self, directory: Path, port: int) -> None:
        self.directory = directory
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = (self.directory / "redis.log").open("ab")
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.directory),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 30
        client = redis.Redis.from_url(self.url, socket_connect_timeout=1, socket_timeout=1)
        while True:
            try:
                client.ping()
                return
            except redis.RedisError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(
                        "redis-server did not start: " + (self.directory / "redis.log").read_text()
                    )
            time.sleep(0.05)  # polling a condition with a deadline

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def freeze(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)


@contextmanager
def dedicated_redis(directory: Path, port: int) -> Iterator[DedicatedRedis]:
    if shutil.which("redis-server") is None:
        pytest.fail(f"redis-server is not installed; run: {INSTALL_TOOLS}", pytrace=False)
    server = DedicatedRedis(directory, port)
    server.start()
    try:
        yield server
    finally:
        server.kill()
