from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.apikey.models import ApiKey
from tenantplane.apikey.repository import ApiKeyRepository
from tenantplane.apikey.tokens import hash_key, is_key_id, new_key_id, new_raw_key
from tenantplane.db.base import epoch_microseconds, from_epoch_microseconds
from tenantplane.db.clock import clock_of
from tenantplane.http.errors import NotFound, ValidationFailed
from tenantplane.http.paging import WHOLE, Page, SortKey, split_page
from tenantplane.keys import KeyRing
from tenantplane.member.models import Role


@dataclass(frozen=True)
class IssuedKey:
    key: ApiKey
    raw_key: str


async def issue(
    session: AsyncSession,
    *,
    keys: KeyRing,
    tenant_id: int,
    display_name: str,
    role: Role,
    created_by: str,
    expires_at: datetime | None = None,
) -> IssuedKey:
    # The database's time (db/clock.py): the expiry is judged by it in every request.
    now = await clock_of(session).now()
    if expires_at is not None and expires_at <= now:
        raise ValidationFailed("expiresAt must be in the future", field="expiresAt")
    raw_key = new_raw_key()
    key_hash, derivation = hash_key(keys, raw_key)
    key = ApiKey(
        id=new_key_id(),
        tenant_id=tenant_id,
        display_name=display_name,
        role=role,
        key_hash=key_hash,
        key_derivation=derivation,
        expires_at=expires_at,
        created_at=now,
        created_by=created_by,
    )
    ApiKeyRepository.from_session(session).add(key)
    await session.flush()
    return IssuedKey(key, raw_key)


async def list_keys(
    session: AsyncSession, tenant_id: int, page: Page = WHOLE
) -> tuple[Sequence[ApiKey], SortKey | None]:
    """A page of the tenant's keys, oldest first, and the last one's sort key when more
    remain (its creation in epoch microseconds, then its id)."""
    after = None
    if page.after is not None:
        created, key_id = page.after
        after = (from_epoch_microseconds(int(created)), str(key_id))
    limit = None if page.limit is None else page.limit + 1
    found = await ApiKeyRepository.from_session(session).list(tenant_id, after, limit)
    return split_page(found, page.limit, lambda key: (epoch_microseconds(key.created_at), key.id))


def check_key_id(key_id: str) -> str:
    if not is_key_id(key_id):
        raise ValidationFailed("invalid API key id: expected ak-…", field="id", code="INVALID_ID")
    return key_id


async def get(session: AsyncSession, tenant_id: int, key_id: str) -> ApiKey:
    key = await ApiKeyRepository.from_session(session).get(tenant_id, check_key_id(key_id))
    if key is None:
        raise NotFound("API key")
    return key


async def revoke(session: AsyncSession, tenant_id: int, key_id: str) -> None:
    if not await ApiKeyRepository.from_session(session).delete(tenant_id, check_key_id(key_id)):
        raise NotFound("API key")


async def count_awaiting_rehash(session: AsyncSession, keys: KeyRing) -> int:
    """Keys hashed under a fallback secret key or before derivation: each is re-hashed when it
    is next used (the raw key is needed); until then the key it was made with must stay."""
    return await ApiKeyRepository.from_session(session).count_not_derived_with(
        keys.current.derivation
    )
