"""The dispatcher: the tenant's event stream is the outbox of its webhooks.

Each webhook row carries a cursor (``cursor_seq``: the last position of the tenant's stream
already looked at). ``append`` makes the tenant's enabled webhooks due with every event it
writes, in the event's own transaction (event/log.py), and wakes this reconciler after the
commit. Under its lease on a webhook, one transaction reads the events after the cursor, in
order, makes a delivery of each whose action matches the webhook's patterns and moves the
cursor past them: the deliveries and the cursor commit together, so every event is turned
into a delivery exactly once per webhook, whatever crashes.

Race with new events: the transaction share-locks the tenant's chain head (PostgreSQL)
before it reads anything, as ``append`` locks it before it touches the webhooks. An append
in flight commits first, and its event is read; one that begins waits for this transaction
and then makes the webhook due again. The head read under the lock is where the cursor may
go: the webhook is left due when it is not there yet (more events than one batch), and only
then is its ``reconcile_at`` cleared. SQLite runs one writer at a time: the same holds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar

from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.schema import Table

from tenantplane.event.log import DISPATCHER
from tenantplane.event.webhook.models import DeliveryState, Webhook
from tenantplane.event.webhook.patterns import matches
from tenantplane.event.webhook.repository import EventRow, WebhookRepository
from tenantplane.event.webhook.service import DELIVERY, new_delivery_id
from tenantplane.reconcile.fence import Fence
from tenantplane.reconcile.hints import wake_after_commit
from tenantplane.reconcile.lease import LeaseGuard
from tenantplane.reconcile.reconciler import Reconciler
from tenantplane.reconcile.registry import ReconcileContext

# Events looked at per step; a webhook further behind stays due for the next.
BATCH = 500


@dataclass(frozen=True)
class Due:
    webhook_id: str
    tenant_id: int


def event_payload(action: str, body: str, digest: str) -> str:
    """``{"type", "timestamp", "data"}``: the event's action, its time, and the event as
    stored (its canonical JSON, then its ``hash``), as the event list shows it."""
    time = json.loads(body)["time"]
    data = f'{body[:-1]},"hash":"{digest}"}}'
    return f'{{"type":{json.dumps(action)},"timestamp":{json.dumps(time)},"data":{data}}}'


def _delivery(webhook_id: str, tenant_id: int, event: EventRow, now: datetime) -> dict[str, Any]:
    return {
        "id": new_delivery_id(now),
        "webhook_id": webhook_id,
        "tenant_id": tenant_id,
        "message_id": event.id,
        "event_seq": event.seq,
        "event_type": event.action,
        "payload": event_payload(event.action, event.body, event.hash),
        "state": DeliveryState.pending.value,
        "attempts": 0,
        "history": [],
        "created_at": now,
        "reconcile_at": now,
    }


class Dispatcher(Reconciler[Due, None]):
    name: ClassVar[str] = DISPATCHER
    table: ClassVar[Table] = Webhook.__table__  # type: ignore[assignment]
    load_in_one_statement: ClassVar[bool] = True

    def __init__(self, *, concurrency: int, lease_seconds: float, batch: int = BATCH) -> None:
        self.concurrency = concurrency
        self.lease_seconds = lease_seconds
        self.batch = batch

    async def load(self, session: AsyncSession, row_id: Any) -> Due | None:
        state = await WebhookRepository.from_session(session).dispatch_state(row_id)
        if state is None or not state.enabled:
            return None
        return Due(str(row_id), int(state.tenant_id))

    async def act(self, snapshot: Due, fence: Fence) -> None:
        """Nothing outside: the work is the apply's transaction."""
        return None

    async def apply(
        self, session: AsyncSession, guard: LeaseGuard, snapshot: Due, outcome: None
    ) -> None:
        repository = WebhookRepository.from_session(session)
        # The head first, as append takes it: no event commits before this transaction ends.
        head = await repository.head_shared(snapshot.tenant_id)
        state = await repository.dispatch_state(snapshot.webhook_id)
        if state is None or not state.enabled:
            await guard.update(reconcile_at=None)
            return
        cursor = int(state.cursor_seq)
        events = await repository.events_after(snapshot.tenant_id, cursor, head, self.batch)
        more = len(events) == self.batch and int(events[-1].seq) < head
        # Past the head read under the lock, not further: an event that follows makes the
        # webhook due again (and events purged before they were read are skipped).
        moved = int(events[-1].seq) if more else max(head, cursor)
        now = await guard.now()
        patterns = list(state.events)
        matching = [event for event in events if matches(patterns, event.action)]
        # A microsecond apart, in the stream's order: the list (newest first) keeps it.
        rows = [
            _delivery(
                snapshot.webhook_id, snapshot.tenant_id, event, now + timedelta(microseconds=i)
            )
            for i, event in enumerate(matching)
        ]
        if not await guard.update(cursor_seq=moved, reconcile_at=now if more else None):
            return  # the lease was lost: whoever holds it now makes these deliveries
        await repository.insert_deliveries(rows)
        if rows:
            wake_after_commit(session, DELIVERY)


def build_dispatcher(context: ReconcileContext) -> Reconciler[Any, Any] | None:
    settings = context.settings
    return Dispatcher(
        concurrency=settings.reconcile_concurrency, lease_seconds=settings.reconcile_lease_seconds
    )
