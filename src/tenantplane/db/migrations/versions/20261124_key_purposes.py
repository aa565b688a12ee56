"""Key purposes: which derivation of the secret key made each API-key hash and ciphertext

Revision ID: 0009_key_purposes
Revises: 0008_tenant_state
Create Date: 2026-11-24 00:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_key_purposes"
down_revision: str | None = "0008_tenant_state"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("api_keys", "alerting_credentials")


def upgrade() -> None:
    # Expand only: existing rows were made before keys were derived ("legacy") and stay
    # readable; older replicas ignore the column and keep writing legacy rows, which the new
    # code reads as such.
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.add_column(
                sa.Column(
                    "key_derivation", sa.String(length=40), server_default="legacy", nullable=False
                )
            )


def downgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("key_derivation")
