"""The real databases and Redis the tests run against.

PostgreSQL and Redis are taken from TENANTPLANE_TEST_POSTGRES_URL / TENANTPLANE_TEST_REDIS_URL
(default: the services on this machine). Each test run creates and drops its own databases.
A missing service fails its tests with the command that provides it (`scripts/test-deps
--services`): a run that skipped half the suite must not pass.
"""

from __future__ import annotations

import os
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
INSTALL_SERVICES = "sudo scripts/test-deps --services"
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
