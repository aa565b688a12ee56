"""tenant_state_for_write(): a write's share of the tenant's state lock and the state it
must obey, in one round trip (PostgreSQL only)

A write takes the tenant's state lock shared (state changes take it exclusively) and then
reads the state. The read must come after the lock, in a snapshot of its own: a statement's
snapshot is taken when it starts, so one statement taking the lock and reading the state
would read the state as it was before waiting for a change in flight. A VOLATILE function
takes a fresh snapshot for each of its queries, so the read in it sees the change that
committed while it waited: the two statements become one call.

Revision ID: 0013_tenant_state_for_write
Revises: 0012_idempotency_keys
Create Date: 2026-11-26 00:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013_tenant_state_for_write"
down_revision: str | None = "0012_idempotency_keys"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    # 1937006964 (0x73746174, "stat"): the lock class of tenant state locks, as
    # tenant/repository.py's _STATE_LOCK_CLASS.
    op.execute(
        """
        CREATE FUNCTION tenant_state_for_write(tenant integer) RETURNS varchar
        LANGUAGE plpgsql VOLATILE AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock_shared(1937006964, tenant);
            RETURN (SELECT state FROM tenants WHERE id = tenant);
        END
        $$
        """
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP FUNCTION tenant_state_for_write(integer)")
