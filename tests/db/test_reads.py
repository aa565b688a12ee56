"""Plain reads (db/reads.py): no write lock, no transaction unless a snapshot is asked for,
and no way to write through them."""

from __future__ import annotations

from functools import partial

import pytest
from sqlalchemy import func, insert, select, text
from sqlalchemy.exc import OperationalError

from tenantplane.apikey.models import ApiKey
from tenantplane.apikey.repository import find_credential
from tenantplane.cluster.models import ClusterPhase
from tenantplane.cluster.repository import (
    cluster_listing_of,
    read_cluster,
    read_clusters,
    read_connection,
)
from tenantplane.db.engine import Database
from tenantplane.db.sqlite_reads import SqliteReads
from tenantplane.member.repository import find_membership
from tenantplane.tenant.models import Tenant
from tests.factories import Factory
from tests.reads import agree, listed, no_documents, snapshot_of

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
    assert tuple(await database.reads.first(TENANT_COUNT, {}) or ()) == (1,)


async def test_single_reads_open_no_transaction_and_a_snapshot_is_one(
    database: Database,
) -> None:
    if database.is_sqlite:
        assert isinstance(database.reads, SqliteReads)
        await database.reads.first(TENANT_COUNT, {})
        await database.reads.snapshot((TENANT_COUNT, {}), (TENANT_COUNT, {}))
        # No transaction (and so no snapshot) left open on this thread's connection.
        assert not database.reads.in_transaction()
        return
    one_statement = text("SELECT transaction_timestamp() = statement_timestamp()")
    # Autocommit: the statement is its own transaction (no BEGIN round trip before it).
    assert tuple(await database.reads.first(one_statement, {}) or ()) == (True,)
    now = text("SELECT transaction_timestamp()")
    first, second = await database.reads.snapshot((now, {}), (now, {}))
    assert first == second


async def test_rows_hold_the_values_and_types_a_session_reads(
    database: Database, factory: Factory
) -> None:
    """On PostgreSQL the plain reads go through psycopg directly, their values converted by
    SQLAlchemy's processors: UTC timestamps, enums, JSON documents, lists sent as arrays."""
    tenant = await factory.tenant()
    await factory.member(tenant.id, "reader@example.com")
    alpha, beta = [await factory.cluster_row(tenant.id, name) for name in ("alpha", "beta")]
    await factory.cluster_row(tenant.id, "gamma", phase=ClusterPhase.provisioning)
    async with database.transaction() as session:
        key_hash = (await session.execute(select(ApiKey.key_hash).limit(1))).scalar_one()

    clusters = cluster_listing_of(tenant.id, no_documents, lambda row: (row.id,))
    digest, *versions = await agree(database, snapshot_of(clusters))
    assert len(versions) == 3
    # The digest names each row, in the list's order.
    digested = [part.split(":")[:3] for part in digest[0].split(",")]
    assert digested == [[str(row.id), str(row.resource_version), row.name] for row in versions]
    for ids in ([alpha.id, beta.id], [beta.id], []):
        found = await agree(database, partial(read_clusters, tenant_id=tenant.id, cluster_ids=ids))
        assert sorted(row.id for row in found) == sorted(ids)
    for name in ("alpha", "gamma", "missing"):
        shown = await agree(database, listed(partial(read_cluster, tenant_id=tenant.id, name=name)))
        assert [row.name for row in shown] == ([] if name == "missing" else [name])
        await agree(database, listed(partial(read_connection, tenant_id=tenant.id, name=name)))
    (credential,) = await agree(
        database, listed(partial(find_credential, key_hashes=[b"other", key_hash]))
    )
    assert credential.tenant_name == tenant.name
    (membership,) = await agree(
        database,
        listed(partial(find_membership, tenant_name=tenant.name, email="READER@example.com")),
    )
    assert membership.tenant_id == tenant.id
