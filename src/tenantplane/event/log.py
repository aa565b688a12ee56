"""Appending to a tenant's event stream, in the caller's transaction.

An event is written by the transaction that makes the change it records, so one never
commits without the other. The append locks the tenant's chain head (``event_chains``) until
that transaction ends: a tenant's events take their positions one transaction at a time, and
positions commit in order, without gaps. The append comes last in its transaction (just
before the commit), so the head is the last lock it takes but one: the tenant's webhook rows,
made due for their dispatcher, which every other writer of those rows locks only after the
head (event/webhook/repository.py, ``lock_chain``, ``head_shared``). No two transactions
can wait for each other in a cycle.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Integer, any_, bindparam, func, update
from sqlalchemy.dialects import sqlite
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.schema import Table
from ulid import ULID

from tenantplane.db.base import rfc3339
from tenantplane.db.clock import clock_of, due_now
from tenantplane.db.rows import ROWS, encode_json, insert_from_json, insert_rows, update_rows
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


def operator_event(action: str, kind: str, name: str, **data: Any) -> Draft:
    """An audit event of an operator's command (actor ``operator``; no source address,
    request id or status: it was not an HTTP request), with what it set in ``data``."""
    return Draft(EventType.audit, action, kind, name, OPERATOR, data)


def new_event_id(time: datetime) -> str:
    """Unique and sortable: a ULID (milliseconds since the epoch, then 80 random bits)."""
    return str(ULID.from_datetime(time))


async def append(session: AsyncSession, tenant_id: int, draft: Draft) -> dict[str, Any]:
    """Append ``draft`` to the tenant's stream in ``session``'s transaction; the event as
    stored (``hash`` included)."""
    (stored,) = await append_all(session, [(tenant_id, draft)])
    return stored


_HEAD_COLUMNS = ("tenant_id", "seq", "hash", "purged_seq", "purged_hash", "reconcile_at")


@functools.cache
def _head_upsert(dialect: str) -> Any:
    """The chain heads' upsert, built once per dialect: on PostgreSQL its rows go as one
    JSON parameter (db/rows.py: one prepared text whatever their number), on SQLite as an
    executemany. An upsert that changes nothing takes a row's lock as an update would."""
    table: Table = EventChain.__table__  # type: ignore[assignment]
    statement: Any = (
        insert_from_json(table, _HEAD_COLUMNS) if dialect == "postgresql" else sqlite.insert(table)
    )
    return statement.on_conflict_do_update(
        index_elements=[table.c.tenant_id], set_={"seq": table.c.seq}
    ).returning(table.c.tenant_id, table.c.seq, table.c.hash)


@functools.cache
def _webhooks_due(dialect: str) -> Any:
    """The tenants' enabled webhooks made due now (a Core statement: the ORM's bulk update
    would look for the rows in the session's identity map as well)."""
    table: Table = Webhook.__table__  # type: ignore[assignment]
    if dialect == "postgresql":
        # ``= ANY(array)``: one text for any number of tenants (``IN`` has one per count).
        tenants = table.c.tenant_id == any_(bindparam("tenant_ids", type_=ARRAY(Integer)))
        now: Any = func.now()
    else:
        tenants = table.c.tenant_id.in_(bindparam("tenant_ids", expanding=True))
        now = bindparam("now")
    return (
        update(table)
        .where(tenants, table.c.enabled.is_(True))
        .values(reconcile_at=now)
        .returning(table.c.id)
    )


async def _lock_heads(
    session: AsyncSession, tenant_ids: Sequence[int], time: datetime
) -> dict[int, tuple[int, str]]:
    """The tenants' chain heads (each made on its tenant's first event), locked in the order
    given until the transaction ends."""
    dialect = session.get_bind().dialect.name
    # Retention looks at the tenant's events from an hour after the first.
    heads = [
        dict(
            tenant_id=tenant_id,
            seq=0,
            hash=GENESIS,
            purged_seq=0,
            purged_hash=GENESIS,
            reconcile_at=time + timedelta(hours=1),
        )
        for tenant_id in tenant_ids
    ]
    parameters: Any = {ROWS: encode_json(heads)} if dialect == "postgresql" else heads
    rows = (await session.execute(_head_upsert(dialect), parameters)).all()
    return {int(row.tenant_id): (int(row.seq), str(row.hash)) for row in rows}


async def append_all(
    session: AsyncSession, drafts: Sequence[tuple[int, Draft]]
) -> list[dict[str, Any]]:
    """``append`` for many events (tenant id, draft), of one tenant or several, in
    ``session``'s transaction: for a reconciler's batch or a billing run, whose rows of
    many tenants change together. One time for all, and four statements whatever the
    number of events and tenants: the tenants' chain heads locked in one, in the order of
    their ids (two transactions appending for the same tenants never wait on each other in
    a cycle), the events inserted in one, the heads moved in one, the tenants' webhooks
    marked due in one. Each tenant's events take their
    positions in the order given, and their ids increase in that order. The events as
    stored, in the order of the tenants' ids."""
    if not drafts:
        return []
    time = await clock_of(session).now()
    by_tenant: dict[int, list[Draft]] = {}
    for tenant_id, draft in drafts:
        by_tenant.setdefault(tenant_id, []).append(draft)
    tenant_ids = sorted(by_tenant)
    heads = await _lock_heads(session, tenant_ids, time)
    ids = iter(sorted(new_event_id(time) for _ in drafts))
    rows: list[dict[str, Any]] = []
    stored: list[dict[str, Any]] = []
    moved: list[dict[str, Any]] = []
    for tenant_id in tenant_ids:
        seq, digest = heads[tenant_id]
        for draft in by_tenant[tenant_id]:
            event = draft.event(next(ids), time)
            body = canonical_json(event)
            seq += 1
            digest = chained_hash(digest, body)
            stored.append({**event, "hash": digest})
            rows.append(
                dict(
                    tenant_id=tenant_id,
                    seq=seq,
                    time=time,
                    body=body,
                    hash=digest,
                    **columns_of(event),
                )
            )
        moved.append({"tenant_id": tenant_id, "seq": seq, "hash": digest})
    await insert_rows(session, Event.__table__, rows)  # type: ignore[arg-type]
    await update_rows(session, EventChain.__table__, moved)  # type: ignore[arg-type]
    # The tenants' webhooks have events to look at: due now (db/clock.py, due_now), and
    # their dispatcher woken (only if there are any: most tenants have none, and the
    # wake-up costs a statement).
    dialect = session.get_bind().dialect.name
    due: dict[str, Any] = {"tenant_ids": tenant_ids}
    if dialect != "postgresql":
        due["now"] = due_now(session)
    subscribed = await session.execute(_webhooks_due(dialect), due)
    if subscribed.first() is not None:
        wake_after_commit(session, DISPATCHER)
    return stored
