"""Reading the event stream: filtered pages, newest first, and the whole chain for checks."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, Select, bindparam, delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.db.reads import ReadRow, Reads
from tenantplane.event.chain import StoredLink
from tenantplane.event.models import Event, EventChain


@dataclass(frozen=True)
class EventFilter:
    """What a list asks for; None: not filtered on. ``action_prefix``: the part of an
    ``action`` pattern before its ``*``."""

    type: str | None = None
    action: str | None = None
    action_prefix: str | None = None
    kind: str | None = None
    name: str | None = None
    actor: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    before_seq: int | None = None

    def present(self) -> frozenset[str]:
        return frozenset(key for key, value in self.__dict__.items() if value is not None)


_CONDITIONS: dict[str, Callable[[], ColumnElement[bool]]] = {
    "type": lambda: Event.type == bindparam("type"),
    "action": lambda: Event.action == bindparam("action"),
    "action_prefix": lambda: Event.action.like(bindparam("action_prefix"), escape="\\"),
    "kind": lambda: Event.resource_kind == bindparam("kind"),
    "name": lambda: Event.resource_name == bindparam("name"),
    "actor": lambda: Event.actor_id == bindparam("actor"),
    "since": lambda: Event.time >= bindparam("since", type_=Event.time.type),
    "until": lambda: Event.time <= bindparam("until", type_=Event.time.type),
    "before_seq": lambda: Event.seq < bindparam("before_seq"),
}


@functools.cache
def _page_statement(filters: frozenset[str]) -> Select[int, str, str]:
    # One statement per combination of filters, built (and compiled) once.
    statement = (
        select(Event.seq, Event.body, Event.hash)
        .where(Event.tenant_id == bindparam("tenant_id"))
        .order_by(Event.seq.desc())
        .limit(bindparam("limit"))
    )
    for key in sorted(filters):
        statement = statement.where(_CONDITIONS[key]())
    return statement


def _like_prefix(prefix: str) -> str:
    """A LIKE pattern matching what starts with ``prefix`` (its wildcards escaped)."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


async def page(reads: Reads, tenant_id: int, wanted: EventFilter, limit: int) -> Sequence[ReadRow]:
    """At most ``limit`` events matching ``wanted``, newest first."""
    values = {key: value for key, value in wanted.__dict__.items() if value is not None}
    if wanted.action_prefix is not None:
        values["action_prefix"] = _like_prefix(wanted.action_prefix)
    statement = _page_statement(wanted.present())
    return await reads.all(statement, {**values, "tenant_id": tenant_id, "limit": limit})


class EventRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def chain(self, tenant_id: int) -> EventChain | None:
        return await self.session.get(EventChain, tenant_id)

    async def links(
        self, tenant_id: int, *, since: datetime | None = None, batch: int = 1000
    ) -> AsyncIterator[StoredLink]:
        """The tenant's events in chain order, read ``batch`` at a time."""
        after = 0
        while True:
            statement = (
                select(Event)
                .where(Event.tenant_id == tenant_id, Event.seq > after)
                .order_by(Event.seq)
                .limit(batch)
            )
            if since is not None:
                statement = statement.where(Event.time >= since)
            rows = (await self.session.execute(statement)).scalars().all()
            for row in rows:
                yield StoredLink(
                    row.seq,
                    row.id,
                    row.body,
                    row.hash,
                    {
                        "id": row.id,
                        "type": row.type,
                        "action": row.action,
                        "resource_kind": row.resource_kind,
                        "resource_name": row.resource_name,
                        "actor_kind": row.actor_kind,
                        "actor_id": row.actor_id,
                    },
                )
            if len(rows) < batch:
                return
            after = rows[-1].seq
            self.session.expunge_all()

    async def last_before(self, tenant_id: int, cutoff: datetime) -> Event | None:
        """The newest event older than ``cutoff``."""
        statement = (
            select(Event)
            .where(Event.tenant_id == tenant_id, Event.time < cutoff)
            .order_by(Event.seq.desc())
            .limit(1)
        )
        return (await self.session.execute(statement)).scalar_one_or_none()

    async def purge_through(self, tenant_id: int, seq: int, last_hash: str) -> int:
        """Delete the tenant's events up to ``seq`` and record where the kept chain begins."""
        result = await self.session.execute(
            delete(Event).where(Event.tenant_id == tenant_id, Event.seq <= seq)
        )
        await self.session.execute(
            update(EventChain)
            .where(EventChain.tenant_id == tenant_id, EventChain.purged_seq < seq)
            .values(purged_seq=seq, purged_hash=last_hash)
        )
        return int(result.rowcount or 0)  # type: ignore[attr-defined]
