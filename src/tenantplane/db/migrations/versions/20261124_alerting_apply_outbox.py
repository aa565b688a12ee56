"""Alerting configurations are applied to the backend after commit, by a reconciler

Expand only: the new columns have defaults, and configurations stored before were applied
synchronously, so they start as applied at their current version.

Revision ID: 0011_alerting_apply_outbox
Revises: 0010_invoice_period_unique
Create Date: 2026-11-24 00:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import tenantplane.db.base

revision: str = "0011_alerting_apply_outbox"
down_revision: str | None = "0010_invoice_period_unique"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("alerting_configs") as batch:
        batch.add_column(sa.Column("applied_version", sa.Integer(), nullable=True))
        batch.add_column(
            sa.Column("remove_pending", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch.add_column(
            sa.Column(
                "apply_status", sa.String(length=16), server_default="applied", nullable=False
            )
        )
        batch.add_column(sa.Column("apply_error", sa.Text(), server_default="", nullable=False))
        batch.add_column(
            sa.Column("apply_attempts", sa.Integer(), server_default="0", nullable=False)
        )
        batch.add_column(sa.Column("lock_owner", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("lock_token", sa.String(length=32), nullable=True))
        batch.add_column(
            sa.Column(
                "lock_expires_at", tenantplane.db.base.UTCDateTime(timezone=True), nullable=True
            )
        )
        batch.add_column(
            sa.Column("reconcile_at", tenantplane.db.base.UTCDateTime(timezone=True), nullable=True)
        )
        batch.create_index(
            batch.f("ix_alerting_configs_reconcile_at"), ["reconcile_at"], unique=False
        )
    op.execute("UPDATE alerting_configs SET applied_version = resource_version")


def downgrade() -> None:
    with op.batch_alter_table("alerting_configs") as batch:
        batch.drop_index(batch.f("ix_alerting_configs_reconcile_at"))
        for column in (
            "reconcile_at",
            "lock_expires_at",
            "lock_token",
            "lock_owner",
            "apply_attempts",
            "apply_error",
            "apply_status",
            "remove_pending",
            "applied_version",
        ):
            batch.drop_column(column)
