"""N replicas starting at once on an empty database: migrations are serialised."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text

from tenantplane.db.migrate import alembic_config, sync_url
from tests.backends import postgres_database

PROCESSES = 4


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'data' / 'tenantplane.db'}"
    else:
        with postgres_database("tenantplane_first_start") as url:
            yield url


async def _migrate(url: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tenantplane",
        "migrate",
        "--json",
        env={**os.environ, "TENANTPLANE_DATABASE_URL": url},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await process.communicate()
    assert process.returncode is not None
    return process.returncode, stdout.decode(), stderr.decode()


def _current_revisions(url: str) -> list[str]:
    engine = create_engine(sync_url(url))
    try:
        with engine.connect() as connection:
            versions = connection.execute(text("SELECT version_num FROM alembic_version"))
            return list(versions.scalars())
    finally:
        engine.dispose()


async def test_concurrent_migrate_commands_all_succeed_on_an_empty_database(
    empty_url: str,
) -> None:
    results = await asyncio.gather(*(_migrate(empty_url) for _ in range(PROCESSES)))
    for code, stdout, stderr in results:
        assert code == 0, stderr
        assert json.loads(stdout)["upToDate"] is True
    head = ScriptDirectory.from_config(alembic_config(empty_url)).get_current_head()
    assert await asyncio.to_thread(_current_revisions, empty_url) == [head]
