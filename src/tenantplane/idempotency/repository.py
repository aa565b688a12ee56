from __future__ import annotations

import hashlib
from datetime import datetime

from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert as postgres_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.idempotency.models import IdempotencyRecord


def advisory_lock_id(tenant_id: int, key: str) -> int:
    """A signed 64-bit number naming one tenant's key (PostgreSQL advisory locks take one)."""
    digest = hashlib.sha256(f"idempotency:{tenant_id}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class IdempotencyRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    @classmethod
    def from_session(cls, session: AsyncSession) -> IdempotencyRepository:
        return cls(session)

    @property
    def _is_postgres(self) -> bool:
        return self.session.get_bind().dialect.name == "postgresql"

    async def try_lock(self, tenant_id: int, key: str) -> bool:
        """Hold the key for this transaction; False when another transaction holds it.

        SQLite transactions begin IMMEDIATE (one writer at a time), so there the request
        already holds the only write lock and a repeat waits for it instead.
        """
        if not self._is_postgres:
            return True
        lock = func.pg_try_advisory_xact_lock(advisory_lock_id(tenant_id, key))
        return bool((await self.session.execute(select(lock))).scalar_one())

    async def lock(self, tenant_id: int, key: str) -> None:
        """Wait for the key (a short wait: only to order a failure's record after a success)."""
        if self._is_postgres:
            lock = func.pg_advisory_xact_lock(advisory_lock_id(tenant_id, key))
            await self.session.execute(select(lock))

    async def purge_expired(self, tenant_id: int, now: datetime) -> None:
        await self.session.execute(
            delete(IdempotencyRecord).where(
                IdempotencyRecord.tenant_id == tenant_id, IdempotencyRecord.expires_at <= now
            )
        )

    async def get(self, tenant_id: int, key: str) -> IdempotencyRecord | None:
        return await self.session.get(IdempotencyRecord, (tenant_id, key))

    async def add(self, record: IdempotencyRecord) -> None:
        self.session.add(record)
        await self.session.flush()

    async def add_unless_present(self, record: IdempotencyRecord) -> None:
        values = {
            column.key: getattr(record, column.key)
            for column in IdempotencyRecord.__table__.columns
        }
        insert = postgres_insert if self._is_postgres else sqlite_insert
        statement = insert(IdempotencyRecord).values(**values).on_conflict_do_nothing()
        await self.session.execute(statement)
