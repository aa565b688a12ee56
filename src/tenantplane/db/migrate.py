"""Alembic, driven from code: `tenantplane migrate`, `serve` on start, and the tests."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import make_url

MIGRATIONS = Path(__file__).parent / "migrations"

_SYNC_DRIVERS = {"sqlite": "sqlite", "postgresql": "postgresql+psycopg"}


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


def upgrade(url: str, revision: str = "head") -> None:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    command.upgrade(alembic_config(url), revision)
