"""The database's clock: the one clock every process agrees on.

Lease acquisition and expiry, and the times reconcilers stamp (a cluster's phase changes,
``haEnabledAt``), are taken from PostgreSQL's ``now()`` rather than the process's clock:
a worker whose clock runs ahead must neither judge live leases expired nor stamp the future.
SQLite lives in one machine's file, so the database's clock is that machine's clock; there
it is ``utcnow()``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.db.base import utcnow


async def database_now(session: AsyncSession) -> datetime:
    """Now, by the database's clock (PostgreSQL: the start of the session's transaction)."""
    if session.get_bind().dialect.name != "postgresql":
        return utcnow()
    value: datetime = (await session.execute(select(func.now()))).scalar_one()
    return value.astimezone(UTC)
