from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from sqlalchemy import bindparam, delete, func, or_, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.apikey.models import ApiKey
from tenantplane.db.reads import ReadRow, Reads
from tenantplane.tenant.models import Tenant

_CREDENTIAL = (
    select(
        ApiKey.id,
        ApiKey.key_hash,
        ApiKey.key_derivation,
        ApiKey.role,
        ApiKey.created_by,
        ApiKey.expires_at,
        ApiKey.last_used_at,
        ApiKey.tenant_id,
        Tenant.name.label("tenant_name"),
    )
    .join(Tenant, Tenant.id == ApiKey.tenant_id)
    .where(ApiKey.key_hash.in_(bindparam("hashes", expanding=True)))
    .limit(1)
)


async def find_credential(reads: Reads, key_hashes: Collection[bytes]) -> ReadRow | None:
    """What authentication needs of the key stored under any of ``key_hashes``, with its
    tenant's name (one indexed lookup, a plain read)."""
    return await reads.first(_CREDENTIAL, {"hashes": list(key_hashes)})


class ApiKeyRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    @classmethod
    def from_session(cls, session: AsyncSession) -> ApiKeyRepository:
        return cls(session)

    async def rehash(self, key_id: str, old_hash: bytes, new_hash: bytes, derivation: str) -> None:
        """Store a key under the current secret key's hash (a no-op if another request did)."""
        statement = (
            update(ApiKey)
            .where(ApiKey.id == key_id, ApiKey.key_hash == old_hash)
            .values(key_hash=new_hash, key_derivation=derivation)
            .execution_options(synchronize_session=False)
        )
        await self.session.execute(statement)

    async def count_not_derived_with(self, derivation: str) -> int:
        """Keys whose hash another key than ``derivation`` made (re-hashed on their next use)."""
        statement = select(func.count()).where(ApiKey.key_derivation != derivation)
        return int((await self.session.execute(statement)).scalar_one())

    async def list(
        self,
        tenant_id: int,
        after: tuple[datetime, str] | None = None,
        limit: int | None = None,
    ) -> Sequence[ApiKey]:
        """The keys created after ``after`` (created_at, id; all when None), oldest first,
        at most ``limit``."""
        statement = (
            select(ApiKey)
            .where(ApiKey.tenant_id == tenant_id)
            .order_by(ApiKey.created_at, ApiKey.id)
            .limit(limit)
        )
        if after is not None:
            statement = statement.where(tuple_(ApiKey.created_at, ApiKey.id) > tuple_(*after))
        return (await self.session.execute(statement)).scalars().all()

    async def get(self, tenant_id: int, key_id: str) -> ApiKey | None:
        statement = select(ApiKey).where(ApiKey.tenant_id == tenant_id, ApiKey.id == key_id)
        return (await self.session.execute(statement)).scalar_one_or_none()

    def add(self, key: ApiKey) -> None:
        self.session.add(key)

    async def delete(self, tenant_id: int, key_id: str) -> bool:
        statement = delete(ApiKey).where(ApiKey.tenant_id == tenant_id, ApiKey.id == key_id)
        result = await self.session.execute(statement)
        return bool(result.rowcount)  # type: ignore[attr-defined]

    async def touch(self, key_id: str, now: datetime, stale_before: datetime) -> None:
        """Record use, at most once per resolution window (no write on most requests)."""
        statement = (
            update(ApiKey)
            .where(
                ApiKey.id == key_id,
                or_(ApiKey.last_used_at.is_(None), ApiKey.last_used_at < stale_before),
            )
            .values(last_used_at=now)
            .execution_options(synchronize_session=False)
        )
        await self.session.execute(statement)
