from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, create_engine, text

from tenantplane.db.migrate import MigrationRefused, alembic_config, sync_url, upgrade
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


def test_tenants_with_a_final_invoice_are_migrated_as_cancelled(tmp_path: Path) -> None:
    """Before tenant states, a cancelled tenant was one with a final invoice."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'states.db'}"
    upgrade(url, "0005")
    engine = create_engine(sync_url(url))
    tenant = (
        "INSERT INTO tenants (id, name, plan, enforce_metrics_limit, enforce_log_limit,"
        " members_version, created_at, resource_version)"
        " VALUES (:id, :name, 'starter', 0, 0, 1, '2026-09-01 00:00:00', 1)"
    )
    invoice = (
        "INSERT INTO invoices (uid, tenant_id, name, kind, plan, period_start, period_end,"
        " created_at, phase, currency, subtotal, credits_applied, tax, total, conditions,"
        " provider_transaction_id, provider_invoice_number, charge_attempts, last_charge_error,"
        " resource_version)"
        " VALUES (:uid, :tenant, :name, :kind, 'starter', '2026-09-01 00:00:00', :end,"
        " '2026-10-11 00:00:00', 'Draft', 'EUR', '1.00', '0.00', '0.00', '1.00', '[]',"
        " '', '', 0, '', 1)"
    )
    try:
        with engine.begin() as connection:
            for tenant_id, name in ((1, "gone"), (2, "kept")):
                connection.execute(text(tenant), {"id": tenant_id, "name": name})
            for uid, tenant_id, name, kind, end in (
                ("a", 1, "gone-20260901", "regular", "2026-10-01 00:00:00"),
                ("b", 1, "gone-20261001-final", "final", "2026-10-11 00:00:00"),
                ("c", 2, "kept-20260901", "regular", "2026-10-01 00:00:00"),
            ):
                values = {"uid": uid, "tenant": tenant_id, "name": name, "kind": kind, "end": end}
                connection.execute(text(invoice), values)
        upgrade(url)
        with engine.connect() as connection:
            rows = connection.execute(
                text("SELECT name, state, state_changed_at FROM tenants ORDER BY id")
            ).all()
    finally:
        engine.dispose()
    assert [(name, state) for name, state, _ in rows] == [("gone", "cancelled"), ("kept", "active")]
    assert str(rows[0][2]).startswith("2026-10-11 00:00:00")
    assert rows[1][2] is None


DUPLICATE_INVOICE = (
    "INSERT INTO invoices (id, uid, tenant_id, name, kind, plan, period_start, period_end,"
    " created_at, phase, currency, subtotal, credits_applied, tax, total, conditions,"
    " provider_transaction_id, provider_invoice_number, charge_attempts, last_charge_error,"
    " resource_version)"
    " VALUES (:id, :uid, 1, :name, 'regular', 'starter', '2027-12-01 00:00:00+00',"
    " '2028-01-01 00:00:00+00', '2028-01-01 00:00:00+00', :phase, 'EUR', '30.00', '5.00',"
    " '0.00', '25.00', '[]', :transaction, '', 0, '', 1)"
)


def _database_with_duplicate_invoices(url: str, invoices: list[tuple[int, str, str, str]]) -> None:
    """Schema before the constraint; tenant t04 with these (id, name, phase, transaction)
    invoices of one period, each with a line item and a 5.00 credit use, and 10.00 granted."""
    upgrade(url, "0008_tenant_state")
    engine = create_engine(sync_url(url))
    try:
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO tenants (id, name, plan, enforce_metrics_limit,"
                    " enforce_log_limit, members_version, created_at, resource_version)"
                    " VALUES (1, 't04', 'starter', false, false, 1,"
                    " '2027-12-01 00:00:00+00', 1)"
                )
            )
            credit = (
                "INSERT INTO billing_credits (tenant_id, amount, invoice_id, note, created_at)"
                " VALUES (1, :amount, :invoice, '', '2027-12-01 00:00:00+00')"
            )
            connection.execute(text(credit), {"amount": "10.00", "invoice": None})
            for invoice_id, name, phase, transaction in invoices:
                values = {
                    "id": invoice_id,
                    "uid": name,
                    "name": name,
                    "phase": phase,
                    "transaction": transaction,
                }
                connection.execute(text(DUPLICATE_INVOICE), values)
                connection.execute(
                    text(
                        "INSERT INTO invoice_line_items (invoice_id, position, kind,"
                        " description, cluster, quantity, unit, unit_price, amount)"
                        " VALUES (:id, 0, 'platform', 'fee', '', '1', 'month', '30', '30.00')"
                    ),
                    {"id": invoice_id},
                )
                connection.execute(text(credit), {"amount": "-5.00", "invoice": invoice_id})
    finally:
        engine.dispose()


def _invoices_and_credit(url: str) -> tuple[list[str], list[Any], list[str]]:
    engine = create_engine(sync_url(url))
    try:
        with engine.connect() as connection:
            names = connection.execute(text("SELECT name FROM invoices ORDER BY id")).scalars()
            lines = connection.execute(
                text("SELECT invoice_id FROM invoice_line_items ORDER BY invoice_id")
            ).scalars()
            credit = connection.execute(
                text("SELECT amount FROM billing_credits ORDER BY id")
            ).scalars()
            return list(names), list(lines), list(credit)
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'duplicates.db'}"
    else:
        with postgres_database("tenantplane_migrations") as url:
            yield url


def test_duplicate_uncharged_invoices_of_a_period_keep_the_earliest(empty_url: str) -> None:
    _database_with_duplicate_invoices(
        empty_url, [(1, "t04-20271201", "Draft", ""), (2, "t04-20271201-000000", "Draft", "")]
    )
    upgrade(empty_url)
    names, lines, credit = _invoices_and_credit(empty_url)
    assert names == ["t04-20271201"]
    assert lines == [1]
    # The deleted duplicate's credit use is given back: 10.00 granted, 5.00 used once.
    assert credit == ["10.00", "-5.00"]
    assert _differences(empty_url) == []


def test_a_charged_duplicate_is_kept_over_an_earlier_draft(empty_url: str) -> None:
    _database_with_duplicate_invoices(
        empty_url,
        [(1, "t04-20271201", "Draft", ""), (2, "t04-20271201-000000", "Billed", "txn_01")],
    )
    upgrade(empty_url)
    names, lines, credit = _invoices_and_credit(empty_url)
    assert (names, lines, credit) == (["t04-20271201-000000"], [2], ["10.00", "-5.00"])


def test_two_charged_invoices_of_a_period_stop_the_migration(empty_url: str) -> None:
    _database_with_duplicate_invoices(
        empty_url,
        [(1, "t04-20271201", "Paid", "txn_01"), (2, "t04-20271201-000000", "Billed", "txn_02")],
    )
    with pytest.raises(MigrationRefused) as refused:
        upgrade(empty_url)
    assert "t04-20271201 (Paid), t04-20271201-000000 (Billed)" in str(refused.value)
    # Nothing was deleted; the schema stays where it was.
    names, _, credit = _invoices_and_credit(empty_url)
    assert names == ["t04-20271201", "t04-20271201-000000"]
    assert credit == ["10.00", "-5.00", "-5.00"]
