"""One invoice per tenant and billing period (unique tenant_id, period_start)

Overlapping billing runs could issue two invoices for one period (the second named
``{tenant}-{YYYYMMDD-HHMMSS}``). Before the constraint is added, such duplicates are resolved:

* of a period's invoices, the one already charged (not Draft, or with a provider
  transaction) is kept; when none is, the earliest (lowest id) is kept;
* the others, uncharged Drafts by construction, are deleted with their line items, and the
  promotional credit they used is given back (their ledger entries are deleted);
* when two or more invoices of one period were charged, the migration refuses and names
  them: a person must settle them with the payment provider first (refund or credit one,
  then delete its row), because deleting either would lose a real charge.

Revision ID: 0010_invoice_period_unique
Revises: 0008_tenant_state
Create Date: 2026-11-24 00:00:00
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from tenantplane.db.migrate import MigrationRefused

revision: str = "0010_invoice_period_unique"
down_revision: str | None = "0009_key_purposes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _charged(row: Any) -> bool:
    return bool(row.phase != "Draft" or row.provider_transaction_id)


def _duplicates_to_delete(connection: sa.Connection) -> list[int]:
    rows = connection.execute(
        sa.text(
            "SELECT i.id, i.tenant_id, i.period_start, i.name, i.phase,"
            " i.provider_transaction_id"
            " FROM invoices i JOIN ("
            "  SELECT tenant_id, period_start FROM invoices"
            "  GROUP BY tenant_id, period_start HAVING COUNT(*) > 1"
            " ) d ON d.tenant_id = i.tenant_id AND d.period_start = i.period_start"
            " ORDER BY i.id"
        )
    ).all()
    periods: dict[tuple[Any, Any], list[Any]] = {}
    for row in rows:
        periods.setdefault((row.tenant_id, row.period_start), []).append(row)
    doomed: list[int] = []
    conflicts: list[str] = []
    for period in periods.values():
        charged = [row for row in period if _charged(row)]
        if len(charged) > 1:
            conflicts.append(", ".join(f"{row.name} ({row.phase})" for row in charged))
            continue
        keep = charged[0] if charged else period[0]
        doomed += [row.id for row in period if row.id != keep.id]
    if conflicts:
        raise MigrationRefused(
            "several invoices of one billing period were charged; settle them with the "
            "payment provider and delete the extra rows, then migrate again: "
            + "; ".join(conflicts)
        )
    return doomed


def upgrade() -> None:
    connection = op.get_bind()
    doomed = _duplicates_to_delete(connection)
    if doomed:
        # The credit the duplicates used goes back to the balance; line items go with them
        # (deleted explicitly: SQLite's migration connection does not cascade).
        for statement in (
            "DELETE FROM billing_credits WHERE invoice_id IN :ids",
            "DELETE FROM invoice_line_items WHERE invoice_id IN :ids",
            "DELETE FROM invoices WHERE id IN :ids",
        ):
            query = sa.text(statement).bindparams(sa.bindparam("ids", expanding=True))
            connection.execute(query, {"ids": doomed})
    with op.batch_alter_table("invoices") as batch:
        batch.create_unique_constraint(
            batch.f("uq_invoices_tenant_id_period_start"), ["tenant_id", "period_start"]
        )


def downgrade() -> None:
    with op.batch_alter_table("invoices") as batch:
        batch.drop_constraint(batch.f("uq_invoices_tenant_id_period_start"), type_="unique")
