"""Plain reads (db/reads.py): no write lock, no transaction unless a snapshot is asked for,
and no way to write through them."""

from __future__ import annotations

import pytest
from sqlalchemy import func, insert, select, text
from sqlalchemy.exc import OperationalError

from tenantplane.db.engine import Database
from tenantplane.db.reads import SqliteReads
from tenantplane.tenant.models import Tenant
from tests.factories import Factory

TENANT_COUNT = select(func.count()).select_from(Tenant)


async def test_a_read_sees_the_last_commit_and_waits_for_no_writer(
    database: Database, factory: Factory
) -> None:
    await factory.tenant()
    async with database.sessionmaker() as writer, writer.begin():
        # The writer holds its lock (SQLite: the database's write lock) and has not
        # committed: the read answers at once, from the last commit.
        await writer.execute(
            insert(Tenant).values(
                name="uncommitted", plan="starter", state="active", resource_version=1
            )
        )
        row = await database.reads.first(TENANT_COUNT, {})
        assert row is not None
        assert row[0] == 1
    row = await database.reads.first(TENANT_COUNT, {})
    assert row is not None
    assert row[0] == 2


async def test_nothing_can_be_written_through_the_reads(
    database: Database, factory: Factory
) -> None:
    await factory.tenant()
    if database.is_sqlite:
        # query_only connections: SQLite refuses the write itself.
        with pytest.raises(OperationalError, match="readonly"):
            await database.reads.first(text("DELETE FROM tenants"), {})
    else:
        # PostgreSQL: a snapshot is a READ ONLY transaction.
        with pytest.raises(Exception, match="read-only transaction"):
            await database.reads.snapshot((text("DELETE FROM tenants"), {}))
    assert (await database.reads.first(TENANT_COUNT, {})) == (1,)


async def test_single_reads_open_no_transaction_and_a_snapshot_is_one(
    database: Database,
) -> None:
    if database.is_sqlite:
        assert isinstance(database.reads, SqliteReads)
        await database.reads.first(TENANT_COUNT, {})
        await database.reads.snapshot((TENANT_COUNT, {}), (TENANT_COUNT, {}))
        # Back in the pool with no transaction (and so no snapshot) left open.
        with database.reads.engine.connect() as connection:
            assert not connection.connection.dbapi_connection.in_transaction  # type: ignore[union-attr]
        return
    one_statement = text("SELECT transaction_timestamp() = statement_timestamp()")
    # Autocommit: the statement is its own transaction (no BEGIN round trip before it).
    assert (await database.reads.first(one_statement, {})) == (True,)
    now = text("SELECT transaction_timestamp()")
    first, second = await database.reads.snapshot((now, {}), (now, {}))
    assert first == second
