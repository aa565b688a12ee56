"""Appending to a tenant's event stream, in the caller's transaction.

An event is written by the transaction that makes the change it records, so one never
commits without the other. The append locks the tenant's chain head (``event_chains``) until
that transaction ends: a tenant's events take their positions one transaction at a time, and
positions commit in order, without gaps. The lock is the last one a transaction takes (the
append comes just before the commit), so its holder never waits for another lock while
holding it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import insert, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from ulid import ULID

from tenantplane.db.base import rfc3339
from tenantplane.db.clock import clock_of
from tenantplane.event.chain import canonical_json, chained_hash, columns_of
from tenantplane.event.models import GENESIS, Event, EventChain
from tenantplane.event.webhook.models import Webhook
from tenantplane.reconcile.hints import wake_after_commit

# The reconciler that turns events into webhook deliveries (event/webhook/dispatcher.py).
DISPATCHER = "webhook-dispatch"


class EventType(enum.StrEnum):
    audit = "audit"  # a request that changed state or was refused
    platform = "platform"  # what the platform observed or did on its own


class ActorKind(enum.StrEnum):
    member = "member"
    apikey = "apikey"
    operator = "operator"
    system = "system"


@dataclass(frozen=True)
class Actor:
    kind: ActorKind
    # A member's email, or an API key's id.
    identifier: str = ""

    def as_json(self) -> dict[str, str]:
        if self.kind is ActorKind.member:
            return {"kind": self.kind.value, "email": self.identifier}
        if self.kind is ActorKind.apikey:
            return {"kind": self.kind.value, "id": self.identifier}
        return {"kind": self.kind.value}


SYSTEM = Actor(ActorKind.system)
OPERATOR = Actor(ActorKind.operator)


@dataclass(frozen=True)
class Draft:
    """An event before it has an id, a time and a place in the chain. ``fields``: what an
    audit event carries beside the common ones (sourceIp, requestId, status,
    resourceVersion)."""

    type: EventType
    action: str
    kind: str
    name: str
    actor: Actor = SYSTEM
    data: dict[str, Any] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict)

    def event(self, event_id: str, time: datetime) -> dict[str, Any]:
        return {
            **self.fields,
            "id": event_id,
            "time": rfc3339(time),
            "type": self.type.value,
            "action": self.action,
            "resource": {"kind": self.kind, "name": self.name},
            "actor": self.actor.as_json(),
            "data": self.data,
        }


def platform_event(action: str, kind: str, name: str, **data: Any) -> Draft:
    """A platform event (the system as its actor) with ``data``."""
    return Draft(EventType.platform, action, kind, name, SYSTEM, data)


def new_event_id(time: datetime) -> str:
    """Unique and sortable: a ULID (milliseconds since the epoch, then 80 random bits)."""
    return str(ULID.from_datetime(time))


async def append(session: AsyncSession, tenant_id: int, draft: Draft) -> dict[str, Any]:
    """Append ``draft`` to the tenant's stream in ``session``'s transaction; the event as
    stored (``hash`` included)."""
    time = await clock_of(session).now()
    event = draft.event(new_event_id(time), time)
    body = canonical_json(event)
    seq, previous = await _lock_head(session, tenant_id, time)
    seq += 1
    digest = chained_hash(previous, body)
    columns = columns_of(event)
    await session.execute(
        insert(Event).values(
            tenant_id=tenant_id, seq=seq, time=time, body=body, hash=digest, **columns
        )
    )
    await session.execute(
        update(EventChain).where(EventChain.tenant_id == tenant_id).values(seq=seq, hash=digest)
    )
    # The tenant's webhooks have an event to look at: due now, and their dispatcher woken.
    await session.execute(
        update(Webhook)
        .where(Webhook.tenant_id == tenant_id, Webhook.enabled.is_(True))
        .values(reconcile_at=time)
    )
    wake_after_commit(session, DISPATCHER)
    return {**event, "hash": digest}


async def _lock_head(session: AsyncSession, tenant_id: int, time: datetime) -> tuple[int, str]:
    """The tenant's chain head (made on its first event), locked until the transaction ends:
    an upsert that changes nothing takes the row's lock as an update would."""
    dialect = session.get_bind().dialect.name
    module: Any = postgresql if dialect == "postgresql" else sqlite
    table = EventChain.__table__
    statement = (
        module.insert(table)
        .values(
            tenant_id=tenant_id,
            seq=0,
            hash=GENESIS,
            purged_seq=0,
            purged_hash=GENESIS,
            # Retention looks at the tenant's events from an hour after the first.
            reconcile_at=time + timedelta(hours=1),
        )
        .on_conflict_do_update(index_elements=[table.c.tenant_id], set_={"seq": table.c.seq})
        .returning(table.c.seq, table.c.hash)
    )
    row = (await session.execute(statement)).one()
    return int(row.seq), str(row.hash)
