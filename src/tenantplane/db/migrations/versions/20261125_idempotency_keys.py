"""Idempotency-Key records: the first response to a creating POST, per tenant and key

Revision ID: 0012_idempotency_keys
Revises: 0011_alerting_apply_outbox
Create Date: 2026-11-25 00:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import tenantplane.db.base

revision: str = "0012_idempotency_keys"
down_revision: str | None = "0011_alerting_apply_outbox"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("headers", sa.JSON(), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("key_derivation", sa.String(length=40), nullable=False),
        sa.Column("created_at", tenantplane.db.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", tenantplane.db.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_idempotency_keys_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "key", name=op.f("pk_idempotency_keys")),
    )
    op.create_index(
        op.f("ix_idempotency_keys_expires_at"), "idempotency_keys", ["expires_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_idempotency_keys_expires_at"), table_name="idempotency_keys")
    op.drop_table("idempotency_keys")
