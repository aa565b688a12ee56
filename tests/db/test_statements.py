"""Database.statements: each statement stands alone on PostgreSQL (autocommit, no BEGIN or
COMMIT round trips); an ordinary transaction on SQLite. The pooled connection goes back to
transactions afterwards."""

from __future__ import annotations

from sqlalchemy import func, insert, select
from sqlalchemy.pool import QueuePool

from tenantplane.db.engine import Database, DatabaseOptions
from tenantplane.tenant.models import Tenant

TENANT_COUNT = select(func.count()).select_from(Tenant)


async def test_a_statement_is_committed_when_it_returns_on_postgresql(database: Database) -> None:
    postgresql = database.engine.dialect.name == "postgresql"
    async with database.statements() as session:
        await session.execute(
            insert(Tenant).values(name="alone", plan="starter", state="active", resource_version=1)
        )
        if postgresql:
            # Seen from another connection before the block ends: nothing was left open.
            row = await database.reads.first(TENANT_COUNT, {})
            assert row is not None
            assert row[0] == 1
    row = await database.reads.first(TENANT_COUNT, {})
    assert row is not None
    assert row[0] == 1


async def test_the_connection_goes_back_to_transactions_afterwards(
    database: Database, database_url: str
) -> None:
    # One connection: the session after ``statements`` gets the very same one.
    single = Database.connect(database_url, DatabaseOptions(pool_size=1, max_overflow=0))
    try:
        async with single.statements() as session:
            await session.execute(select(1))
        async with single.sessionmaker() as writer:
            await writer.execute(
                insert(Tenant).values(
                    name="held", plan="starter", state="active", resource_version=1
                )
            )
            # Uncommitted, so invisible to others: the connection is in a transaction again.
            row = await database.reads.first(TENANT_COUNT, {})
            assert row is not None
            assert row[0] == 0
            await writer.rollback()
    finally:
        await single.dispose()
    row = await database.reads.first(TENANT_COUNT, {})
    assert row is not None
    assert row[0] == 0


async def test_a_worker_pool_keeps_its_overflow_connections_open(database_url: str) -> None:
    """A worker's steps take connections in bursts: those beyond the kept ones are not
    closed when returned (and reopened a moment later); the budget stays the same."""
    options = DatabaseOptions(pool_size=1, max_overflow=2, keep_overflow_open=True)
    worker = Database.connect(database_url, options)
    try:
        sessions = [worker.reader() for _ in range(3)]
        for session in sessions:
            await session.execute(select(1))
        for session in sessions:
            await session.close()
        pool = worker.engine.pool
        assert isinstance(pool, QueuePool)
        assert pool.checkedin() == 3
    finally:
        await worker.dispose()
