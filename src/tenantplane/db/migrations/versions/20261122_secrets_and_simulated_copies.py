"""Managed secrets and the sync simulator's copies

Revision ID: 0005
Revises: 0007
Create Date: 2026-11-22 00:13:16.738640
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import tenantplane.db.base

revision: str = "0005"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The name of a secret is unique among the secrets not being deleted.
LIVE = sa.text("deletion_requested_at IS NULL")


def upgrade() -> None:
    op.create_table(
        "simulator_secret_copies",
        sa.Column("cluster_uid", sa.String(length=32), nullable=False),
        sa.Column("namespace", sa.String(length=63), nullable=False),
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("owner_uid", sa.String(length=32), nullable=False),
        sa.Column("vault_mount", sa.String(length=128), nullable=False),
        sa.Column("secret_path", sa.String(length=255), nullable=False),
        sa.Column("created_at", tenantplane.db.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", tenantplane.db.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("write_count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint(
            "cluster_uid", "namespace", "name", name=op.f("pk_simulator_secret_copies")
        ),
    )
    op.create_table(
        "secrets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("uid", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=63), nullable=False),
        sa.Column("created_at", tenantplane.db.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("secret_path", sa.String(length=255), nullable=False),
        sa.Column("sync", sa.JSON(), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column(
            "deletion_requested_at", tenantplane.db.base.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("phase", sa.String(length=16), nullable=False),
        sa.Column("observed_generation", sa.Integer(), nullable=False),
        sa.Column("sync_statuses", sa.JSON(), nullable=False),
        sa.Column("conditions", sa.JSON(), nullable=False),
        sa.Column("applied", sa.JSON(), nullable=False),
        sa.Column("resource_version", sa.Integer(), nullable=False),
        sa.Column("lock_owner", sa.String(length=64), nullable=True),
        sa.Column("lock_token", sa.String(length=32), nullable=True),
        sa.Column("lock_expires_at", tenantplane.db.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("reconcile_at", tenantplane.db.base.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_secrets_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_secrets")),
        sa.UniqueConstraint("uid", name=op.f("uq_secrets_uid")),
    )
    with op.batch_alter_table("secrets", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_secrets_reconcile_at"), ["reconcile_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_secrets_tenant_id"), ["tenant_id"], unique=False)
        batch_op.create_index(
            "uq_secrets_tenant_id_name_live",
            ["tenant_id", "name"],
            unique=True,
            sqlite_where=LIVE,
            postgresql_where=LIVE,
        )


def downgrade() -> None:
    with op.batch_alter_table("secrets", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_secrets_tenant_id_name_live", sqlite_where=LIVE, postgresql_where=LIVE
        )
        batch_op.drop_index(batch_op.f("ix_secrets_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_secrets_reconcile_at"))

    op.drop_table("secrets")
    op.drop_table("simulator_secret_copies")
