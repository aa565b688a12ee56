"""Checking a tenant's chain, exporting its events, and purging what retention lets go."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.event.chain import Break, ChainWalk
from tenantplane.event.models import GENESIS
from tenantplane.event.repository import EventRepository


@dataclass(frozen=True)
class Verification:
    events: int
    first_seq: int | None
    last_seq: int | None
    broken: Break | None

    @property
    def verified(self) -> bool:
        return self.broken is None


async def verify(session: AsyncSession, tenant_id: int) -> Verification:
    """Walk the tenant's kept chain from the purge anchor to the head; the first break."""
    repository = EventRepository(session)
    chain = await repository.chain(tenant_id)
    start_seq, start_hash = (chain.purged_seq, chain.purged_hash) if chain else (0, GENESIS)
    walk = ChainWalk(start_seq, start_hash)
    broken: Break | None = None
    async for link in repository.links(tenant_id):
        if (broken := walk.check(link)) is not None:
            break
    head = (chain.seq, chain.hash) if chain else (0, GENESIS)
    if broken is None and (walk.seq, walk.hash) != head:
        reason = f"the chain's head is position {head[0]}: the newest events are missing"
        broken = Break(walk.seq + 1, "", reason)
    last = walk.seq if walk.count else None
    return Verification(walk.count, walk.first_seq, last, broken)


async def purge(session: AsyncSession, tenant_id: int, now: datetime, days: int) -> int:
    """Delete the tenant's events older than ``days``; the kept chain still verifies from
    the hash of the last one deleted. The number deleted."""
    newest_purged = await EventRepository(session).last_before(
        tenant_id, now - timedelta(days=days)
    )
    if newest_purged is None:
        return 0
    return await EventRepository(session).purge_through(
        tenant_id, newest_purged.seq, newest_purged.hash
    )
