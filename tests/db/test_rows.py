"""Rows written in one statement whose text does not depend on their number (db/rows.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.exc import StatementError
from sqlalchemy.sql.schema import Table

from tenantplane.billing.models import CreditEntry
from tenantplane.cluster.models import ClusterHistory
from tenantplane.db.engine import Database
from tenantplane.db.rows import insert_rows, update_rows
from tenantplane.providers.orchestrator.simulator_models import SimulatedCluster
from tests.factories import Factory, simulated_deployment
from tests.statements import statements_sent

HISTORY: Table = ClusterHistory.__table__  # type: ignore[assignment]
DEPLOYMENTS: Table = SimulatedCluster.__table__  # type: ignore[assignment]
CREDITS: Table = CreditEntry.__table__  # type: ignore[assignment]
AT = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def _history(uid: str, at: datetime, *, ha_enabled_at: datetime | None = None) -> dict[str, Any]:
    return dict(
        at=at,
        tenant_id=7,
        cluster_id=70,
        cluster_uid=uid,
        cluster_name=f"name-{uid}",
        event="phase_changed",
        phase="Running",
        version="1.31",
        kubernetes_version="v1.31.4",
        high_availability=ha_enabled_at is not None,
        ha_enabled_at=ha_enabled_at,
        cpu_millicores=2_000,
        memory_bytes=4 * 2**30,
        storage_bytes=2**40,  # beyond 32 bits
    )


def _writes(sent: list[str]) -> list[str]:
    # (SQLite's transaction begins with its first statement: BEGIN IMMEDIATE.)
    return [statement for statement in sent if not statement.startswith("BEGIN")]


async def test_insert_rows_writes_every_row_in_one_statement_of_one_text(
    database: Database,
) -> None:
    """Two batches of different sizes: each one statement, the same text (on PostgreSQL
    the rows are its one JSON parameter, so the statement is parsed once and prepared)."""
    batches = [
        [_history("a", AT)],
        [_history(uid, AT + timedelta(seconds=i)) for i, uid in enumerate("bcde")],
    ]
    texts = []
    for batch in batches:
        async with database.transaction() as session:
            with statements_sent(database) as sent:
                await insert_rows(session, HISTORY, batch)
        assert len(_writes(sent)) == 1
        texts.append(_writes(sent)[0])
    if database.is_sqlite:
        assert texts[0].startswith("INSERT INTO CLUSTER_HISTORY")
    else:
        assert texts[0] == texts[1]
    ha = _history("f", AT, ha_enabled_at=AT - timedelta(hours=2, microseconds=5))
    async with database.transaction() as session:
        await insert_rows(session, HISTORY, [ha])
    async with database.sessionmaker() as session:
        rows = (await session.scalars(select(ClusterHistory))).all()
    found = {row.cluster_uid: row for row in rows}
    assert sorted(found) == list("abcdef")
    assert found["e"].at == AT + timedelta(seconds=3)
    assert found["f"].ha_enabled_at == AT - timedelta(hours=2, microseconds=5)
    assert found["f"].high_availability is True
    assert found["a"].ha_enabled_at is None
    assert found["a"].storage_bytes == 2**40


async def test_update_rows_sets_each_row_by_its_key_in_one_statement(
    database: Database,
) -> None:
    async with database.transaction() as session:
        session.add_all([simulated_deployment(uid, last_step_at=AT) for uid in ("u1", "u2", "u3")])
    later = AT + timedelta(seconds=0.2)
    async with database.transaction() as session:
        with statements_sent(database) as sent:
            await update_rows(
                session,
                DEPLOYMENTS,
                [
                    {"uid": "u1", "stage": "ready", "etcd_up": 1, "last_step_at": later},
                    {"uid": "u3", "stage": "deleting", "etcd_up": 0, "last_step_at": AT},
                ],
            )
    assert len(_writes(sent)) == 1
    async with database.sessionmaker() as session:
        rows = {row.uid: row for row in (await session.scalars(select(SimulatedCluster))).all()}
    assert (rows["u1"].stage, rows["u1"].etcd_up, rows["u1"].last_step_at) == ("ready", 1, later)
    assert (rows["u3"].stage, rows["u3"].etcd_up) == ("deleting", 0)
    # Not named: untouched.
    assert (rows["u2"].stage, rows["u2"].last_step_at) == ("creating", AT)
    # Columns not named: untouched.
    assert rows["u1"].name == "name-u1"


async def test_a_naive_time_is_refused_and_nothing_is_written(database: Database) -> None:
    naive = _history("n", AT.replace(tzinfo=None))
    # (SQLite's driver path wraps the column type's ValueError in a StatementError.)
    with pytest.raises((ValueError, StatementError), match="naive datetime"):
        async with database.transaction() as session:
            await insert_rows(session, HISTORY, [_history("m", AT), naive])
    async with database.sessionmaker() as session:
        assert (await session.scalars(select(ClusterHistory))).all() == []


async def test_decimals_are_kept_exactly_and_a_column_left_out_takes_its_default(
    database: Database, factory: Factory
) -> None:
    """A Decimal is written as its canonical text (what ``DecimalString`` keeps); a column
    the rows leave out gets its scalar default (``note``: ""), as an ORM insert gives it,
    though PostgreSQL's INSERT … SELECT applies only server defaults."""
    tenant = await factory.tenant()
    amounts = [Decimal("-12.50"), Decimal("0.10"), Decimal("1E+3")]
    async with database.transaction() as session:
        await insert_rows(
            session,
            CREDITS,
            [{"tenant_id": tenant.id, "amount": amount, "created_at": AT} for amount in amounts],
        )
    async with database.sessionmaker() as session:
        rows = (await session.scalars(select(CreditEntry).order_by(CreditEntry.id))).all()
    assert [str(row.amount) for row in rows] == ["-12.50", "0.10", "1E+3"]
    assert [(row.note, row.invoice_id, row.created_at) for row in rows] == [("", None, AT)] * 3
