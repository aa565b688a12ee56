from __future__ import annotations

import gc
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import delete
from sqlalchemy.engine import make_url

from tenantplane.config import Settings
from tenantplane.db.engine import Database
from tenantplane.db.migrate import upgrade
from tenantplane.db.models import Base
from tests.backends import postgres_database, sqlite_database
from tests.db.leaks import raw_keys_in_postgres, raw_keys_in_sqlite
from tests.factories import Factory
from tests.faketime import SkewedApi, skewed_api
from tests.http_client import api_client, running_app
from tests.oidc_provider import MockProvider, mock_provider

# The fake Kubernetes host cluster (host_cluster) for every package that needs it.
pytest_plugins = ["tests.fakes.kubernetes_fixtures"]

BACKENDS = ["sqlite", "postgresql"]
TEST_SECRET = "test-secret-key-for-api-key-hashes"


@pytest.fixture(autouse=True)
def _heap_settled_between_tests() -> None:
    """Before each test, what the earlier ones left garbage is collected and what survives
    them is frozen (``gc.freeze``), as a server freezes its startup (tenantplane/heap.py).
    A test process starts hundreds of apps; without this, every full collection scanned all
    that the earlier tests had left: 4-5 s each halfway through the suite, with the event
    loop stopped, long enough for a new database connection to time out (a spurious 503).
    Each collection scans only the last test's own objects.

    Before the test, not after it: pytest holds a test's fixture values (its app, its
    client) until its teardown has ended, so a freeze in the teardown froze them with
    whatever cycles they were part of, and those were never collected."""
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session", params=BACKENDS)
def database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """One migrated database per backend for the whole run (the matrix parameter)."""
    backend = request.param
    context = (
        sqlite_database(tmp_path_factory.mktemp("sqlite"))
        if backend == "sqlite"
        else postgres_database()
    )
    with context as url:
        upgrade(url)
        yield url
        # After the whole run on this backend: not one raw key was ever written.
        leaked = (
            raw_keys_in_sqlite(Path(make_url(url).database or ""))
            if backend == "sqlite"
            else raw_keys_in_postgres(url)
        )
        assert leaked == [], f"raw API keys found in the {backend} database"


@pytest.fixture(scope="session")
async def session_database(database_url: str) -> AsyncIterator[Database]:
    database = Database.connect(database_url)
    yield database
    await database.dispose()


@pytest.fixture
async def database(session_database: Database) -> AsyncIterator[Database]:
    """The run's database, emptied after each test so that tests stay independent."""
    yield session_database
    async with session_database.transaction() as session:
        for table in reversed(Base.metadata.sorted_tables):
            await session.execute(delete(table))


def make_settings(database_url: str, tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "secret_key": TEST_SECRET,
        "rate_limit": "100000/minute",
        "log_json": True,
        "simulator_step_seconds": 0.05,
        "secret_key_file": tmp_path / "secret.key",
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)


@pytest.fixture
def settings(database: Database, database_url: str, tmp_path: Path) -> Settings:
    return make_settings(database_url, tmp_path)


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[FastAPI]:
    async with running_app(settings) as application:
        yield application


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with api_client(app) as http:
        yield http


@pytest.fixture
def factory(database: Database) -> Factory:
    return Factory(database, TEST_SECRET.encode())


@pytest.fixture
def unique() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture(scope="session", params=["+600s", "-600s"])
async def skewed_replica(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[SkewedApi]:
    """A server whose wall clock is ten minutes ahead, then one ten minutes behind, on a
    PostgreSQL database of its own (tests/faketime.py)."""
    async with skewed_api(request.param, tmp_path_factory.mktemp("skewed")) as api:
        yield api


@pytest.fixture(scope="session")
def oidc_provider() -> Iterator[MockProvider]:
    """oidc-provider-mock on loopback for the whole run (a real OpenID provider)."""
    with mock_provider() as provider:
        yield provider


def accepting(provider: MockProvider) -> dict[str, str]:
    """The settings of an app that accepts ``provider``'s id tokens."""
    return {"oidc_issuer": provider.issuer, "oidc_audience": provider.audience}


@pytest.fixture
async def oidc_client(
    database: Database, database_url: str, tmp_path: Path, oidc_provider: MockProvider
) -> AsyncIterator[httpx.AsyncClient]:
    """The API accepting the mock provider's id tokens (members sign in with them)."""
    settings = make_settings(database_url, tmp_path, **accepting(oidc_provider))
    async with running_app(settings) as app, api_client(app) as http:
        yield http
