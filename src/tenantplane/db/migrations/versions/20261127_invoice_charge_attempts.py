"""invoice_charge_attempts: each charge attempt recorded before the provider is called

Revision ID: 0014_invoice_charge_attempts
Revises: 0013_tenant_state_for_write
Create Date: 2026-11-27 00:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import tenantplane.db.base

revision: str = "0014_invoice_charge_attempts"
down_revision: str | None = "0013_tenant_state_for_write"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "invoice_charge_attempts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("invoice_id", sa.Integer(), nullable=False),
        sa.Column("lease_token", sa.String(length=32), nullable=False),
        sa.Column("started_at", tenantplane.db.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("finished_at", tenantplane.db.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("transaction_id", sa.String(length=64), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["invoice_id"],
            ["invoices.id"],
            name=op.f("fk_invoice_charge_attempts_invoice_id_invoices"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_invoice_charge_attempts")),
    )
    with op.batch_alter_table("invoice_charge_attempts", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_invoice_charge_attempts_invoice_id"), ["invoice_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("invoice_charge_attempts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_invoice_charge_attempts_invoice_id"))
    op.drop_table("invoice_charge_attempts")
