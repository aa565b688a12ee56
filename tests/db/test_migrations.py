from __future__ import annotations

import asyncio
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, create_engine

from tenantplane.db.migrate import alembic_config, sync_url, upgrade
from tenantplane.db.models import Base
from tests.backends import postgres_database


def _differences(url: str) -> list[Any]:
    engine = create_engine(sync_url(url))
    try:
        with engine.connect() as connection:
            return _compare(connection)
    finally:
        engine.dispose()


def _compare(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return list(compare_metadata(context, Base.metadata))


async def test_migrated_schema_matches_the_models(database_url: str) -> None:
    assert await asyncio.to_thread(_differences, database_url) == []


def test_revisions_form_one_line() -> None:
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    assert len(script.get_heads()) == 1


def test_downgrade_to_base_and_upgrade_again_on_postgres() -> None:
    """Every migration is reversible on a fresh database."""
    from alembic import command

    with postgres_database("tenantplane_migrations") as url:
        upgrade(url)
        command.downgrade(alembic_config(url), "base")
        upgrade(url)
        assert _differences(url) == []
