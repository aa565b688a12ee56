"""Tenant state: active, suspended or cancelled

Revision ID: 0008_tenant_state
Revises: 0005
Create Date: 2026-11-23 00:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import tenantplane.db.base

revision: str = "0008_tenant_state"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Expand only: existing tenants are active; older replicas ignore the new columns.
    with op.batch_alter_table("tenants") as batch:
        batch.add_column(
            sa.Column(
                "state",
                sa.Enum(
                    "active",
                    "suspended",
                    "cancelled",
                    name="tenantstate",
                    native_enum=False,
                    length=16,
                ),
                server_default="active",
                nullable=False,
            )
        )
        batch.add_column(
            sa.Column(
                "suspended_by",
                sa.Enum("operator", "payment", name="suspendedby", native_enum=False, length=16),
                nullable=True,
            )
        )
        batch.add_column(
            sa.Column(
                "state_changed_at",
                tenantplane.db.base.UTCDateTime(timezone=True),
                nullable=True,
            )
        )
        batch.add_column(
            sa.Column(
                "payment_event_at",
                tenantplane.db.base.UTCDateTime(timezone=True),
                nullable=True,
            )
        )
    # Tenants cancelled before states existed: the ones with a final invoice.
    op.execute(
        "UPDATE tenants SET state = 'cancelled', state_changed_at = ("
        "SELECT MAX(period_end) FROM invoices"
        " WHERE invoices.tenant_id = tenants.id AND invoices.kind = 'final'"
        ") WHERE EXISTS ("
        "SELECT 1 FROM invoices WHERE invoices.tenant_id = tenants.id AND invoices.kind = 'final'"
        ")"
    )


def downgrade() -> None:
    with op.batch_alter_table("tenants") as batch:
        batch.drop_column("payment_event_at")
        batch.drop_column("state_changed_at")
        batch.drop_column("suspended_by")
        batch.drop_column("state")
