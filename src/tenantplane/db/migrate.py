"""Alembic, driven from code: `tenantplane migrate`, `serve` on start, and the tests.

Upgrades are serialised across processes, so that any number of replicas (or `migrate`
commands) can start at once on an empty database: on PostgreSQL with a session advisory
lock held on a connection of its own while Alembic runs, on SQLite with an exclusive
``flock`` on a lock file beside the database. Whoever comes second waits, then finds the
schema at head and does nothing.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, pool, text
from sqlalchemy.engine import make_url

from tenantplane.files import create_private, private_lock_file

# pg_advisory_lock's key for migrations (an arbitrary constant: "tenantplane migrate").
MIGRATION_LOCK_KEY = 0x7E7A7E_0001

MIGRATIONS = Path(__file__).parent / "migrations"

_SYNC_DRIVERS = {"sqlite": "sqlite", "postgresql": "postgresql+psycopg"}


class MigrationRefused(RuntimeError):
    """A migration found data it must not change on its own; the message says what to do."""


def sync_url(url: str) -> str:
    """Migrations run on the synchronous driver of the same database."""
    parsed = make_url(url)
    driver = _SYNC_DRIVERS[parsed.get_backend_name()]
    return parsed.set(drivername=driver).render_as_string(hide_password=False)


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", sync_url(url).replace("%", "%%"))
    return config


@contextmanager
def _postgres_lock(url: str) -> Iterator[None]:
    engine = create_engine(sync_url(url), poolclass=pool.NullPool, hide_parameters=True)
    try:
        with engine.connect() as connection:
            # Autocommit: the lock belongs to the session, not to a transaction left open.
            connection = connection.execution_options(isolation_level="AUTOCOMMIT")
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            try:
                yield
            finally:
                connection.execute(
                    text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK_KEY}
                )
    finally:
        engine.dispose()


@contextmanager
def _file_lock(database: Path) -> Iterator[None]:
    lock_path = database.with_name(database.name + ".migrate.lock")
    with private_lock_file(lock_path) as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def migration_lock(url: str) -> Iterator[None]:
    """Held by one process at a time, per database, while it migrates."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql":
        with _postgres_lock(url):
            yield
    elif parsed.database not in (None, "", ":memory:"):
        database = Path(parsed.database)
        # Owner-only from the start (tenantplane.files).
        create_private(database)
        with _file_lock(database):
            yield
    else:
        yield


def upgrade(url: str, revision: str = "head") -> None:
    with migration_lock(url):
        command.upgrade(alembic_config(url), revision)
