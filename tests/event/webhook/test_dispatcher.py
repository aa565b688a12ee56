"""The dispatcher driven a step at a time (no runner): the tenant's events after a webhook's
cursor become its deliveries, once each and in order, under its lease; and an event that
commits while it works is never left behind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Table, select, text

from tenantplane.db.engine import Database
from tenantplane.event.log import append, platform_event
from tenantplane.event.models import EventChain
from tenantplane.event.webhook.dispatcher import Dispatcher
from tenantplane.event.webhook.models import Webhook, WebhookDelivery
from tenantplane.event.webhook.repository import EventRow, WebhookRepository
from tenantplane.reconcile.fetcher import Fetcher
from tenantplane.reconcile.lease import Lease
from tests.conftest import TEST_SECRET, make_settings
from tests.event.webhook.conftest import LOOPBACK_ALLOWED, create_webhook
from tests.factories import Factory, TenantFixture
from tests.http_client import api_client, api_on_a_postgres_of_its_own, running_app

WEBHOOKS: Table = Webhook.__table__  # type: ignore[assignment]
DEADLINE_SECONDS = 30.0


async def lease_one(database: Database) -> Lease | None:
    leases = await Fetcher(database, WEBHOOKS, "test").lease(1, timedelta(seconds=30))
    return leases[0] if leases else None


async def work(database: Database, dispatcher: Dispatcher, lease: Lease) -> None:
    """The step of a leased webhook, in the sessions the runner gives the dispatcher."""
    async with database.statements() as session:
        snapshot = await dispatcher.load(session, lease.row_id)
        if snapshot is None:
            await lease.guard(session).update(reconcile_at=None)
            return
    async with database.transaction() as session:
        await dispatcher.apply(session, lease.guard(session), snapshot, None)


async def dispatch_once(database: Database, dispatcher: Dispatcher) -> bool:
    """One step of the dispatcher on one due webhook; False when none is due."""
    lease = await lease_one(database)
    if lease is None:
        return False
    await work(database, dispatcher, lease)
    return True


async def record(database: Database, tenant_id: int, *names: str) -> None:
    """Events of the tenant, each in a transaction of its own (as changes make them)."""
    for name in names:
        async with database.transaction() as session:
            await append(session, tenant_id, platform_event("thing.changed", "thing", name))


@dataclass(frozen=True)
class Seen:
    cursor: int
    due: bool
    head: int
    deliveries: list[tuple[int | None, str, str]]  # event_seq, event_type, message_id


async def seen(database: Database, webhook_id: str, tenant_id: int) -> Seen:
    async with database.transaction() as session:
        hook = (await session.execute(select(Webhook).where(Webhook.id == webhook_id))).scalar_one()
        head = await session.get(EventChain, tenant_id)
        rows = (
            await session.execute(
                select(
                    WebhookDelivery.event_seq,
                    WebhookDelivery.event_type,
                    WebhookDelivery.message_id,
                )
                .where(WebhookDelivery.webhook_id == webhook_id)
                .order_by(WebhookDelivery.created_at)
            )
        ).all()
        return Seen(
            hook.cursor_seq,
            hook.reconcile_at is not None,
            head.seq if head else 0,
            [(row.event_seq, row.event_type, row.message_id) for row in rows],
        )


@pytest.fixture
async def api(
    database: Database, database_url: str, tmp_path: Path
) -> AsyncIterator[httpx.AsyncClient]:
    """The API without its reconcilers: the test makes the dispatcher's steps."""
    settings = make_settings(database_url, tmp_path, run_reconcilers=False, **LOOPBACK_ALLOWED)
    async with running_app(settings) as app, api_client(app) as client:
        yield client


async def test_events_become_deliveries_once_each_in_order(
    api: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    await record(database, tenant.id, "before")
    hook = await create_webhook(api, tenant, "https://hooks.example.invalid/", ["thing.*"])
    await record(database, tenant.id, *(f"n{index}" for index in range(7)))
    # Three events a step: the webhook stays due while it is behind.
    dispatcher = Dispatcher(concurrency=1, lease_seconds=30, batch=3)
    steps = 0
    while await dispatch_once(database, dispatcher):
        steps += 1
        assert steps < 10, "the dispatcher never caught up"
    state = await seen(database, hook["id"], tenant.id)
    assert steps == 3  # the creation's event and 7 more: 3 + 3 + 2
    assert (state.cursor, state.due) == (state.head, False)
    async with database.transaction() as session:
        events = await WebhookRepository(session).events_after(tenant.id, 0, state.head, 100)
    wanted = [
        (event.seq, event.action, event.id) for event in events if event.action == "thing.changed"
    ]
    # Only what followed the webhook's creation, each once, in the stream's order.
    assert state.deliveries == wanted[1:]
    assert len(state.deliveries) == 7
    # Nothing new: nothing is due, and another step makes nothing.
    assert not await dispatch_once(database, dispatcher)


async def test_a_disabled_webhook_is_not_dispatched_and_resumes_at_the_head(
    api: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    hook = await create_webhook(api, tenant, "https://hooks.example.invalid/", ["thing.*"])
    patched = await api.patch(
        f"{tenant.path}/webhooks/{hook['id']}",
        json={"enabled": False},
        headers={"Authorization": f"Bearer {tenant.admin_key}"},
    )
    assert patched.status_code == 200
    dispatcher = Dispatcher(concurrency=1, lease_seconds=30)
    while await dispatch_once(database, dispatcher):
        pass
    await record(database, tenant.id, "missed")
    assert not await dispatch_once(database, dispatcher)  # not made due: disabled
    enabled = await api.patch(
        f"{tenant.path}/webhooks/{hook['id']}",
        json={"enabled": True},
        headers={"Authorization": f"Bearer {tenant.admin_key}"},
    )
    assert enabled.status_code == 200
    await record(database, tenant.id, "sent")
    while await dispatch_once(database, dispatcher):
        pass
    state = await seen(database, hook["id"], tenant.id)
    async with database.transaction() as session:
        sent: list[EventRow] = list(
            await WebhookRepository(session).events_after(tenant.id, 0, state.head, 100)
        )
    assert [delivery[2] for delivery in state.deliveries] == [sent[-1].id]


# The statement of a transaction waiting for a row lock another holds (PostgreSQL).
WAITING = text(
    "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype IN ('tuple', 'transactionid')"
)


@pytest.fixture
async def postgres(tmp_path: Path) -> AsyncIterator[tuple[Database, httpx.AsyncClient]]:
    async with api_on_a_postgres_of_its_own("tenantplane_dispatch", tmp_path) as own:
        _, database, client = own
        yield database, client


async def until_waiting(database: Database, task: asyncio.Task[Any]) -> None:
    """Until a transaction waits for a row lock (polled, with a deadline); the task must
    still be waiting then."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + DEADLINE_SECONDS
    while True:
        async with database.sessionmaker() as session:
            if (await session.execute(WAITING)).scalar():
                break
        assert not task.done(), "it did not wait"
        assert loop.time() < give_up, "nothing ever waited"
        await asyncio.sleep(0.02)
    assert not task.done()


async def test_an_event_appended_while_the_dispatcher_works_keeps_the_webhook_due(
    postgres: tuple[Database, httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL (SQLite runs one writer at a time: no race). The dispatcher has read the
    tenant's head; an event appended now waits for the dispatcher's transaction, then
    makes the webhook due again: the cursor is never cleared past an event it did not see."""
    database, client = postgres
    tenant: TenantFixture = await Factory(database, TEST_SECRET.encode()).tenant()
    hook = await create_webhook(client, tenant, "https://hooks.example.invalid/", ["thing.*"])
    dispatcher = Dispatcher(concurrency=1, lease_seconds=30)
    while await dispatch_once(database, dispatcher):
        pass
    await record(database, tenant.id, "seen")

    head_read, go_on = asyncio.Event(), asyncio.Event()
    events_after = WebhookRepository.events_after

    async def paused(self: WebhookRepository, *args: Any) -> Any:
        head_read.set()
        await go_on.wait()
        return await events_after(self, *args)

    monkeypatch.setattr(WebhookRepository, "events_after", paused)
    step = asyncio.create_task(dispatch_once(database, dispatcher))
    await asyncio.wait_for(head_read.wait(), DEADLINE_SECONDS)
    late = asyncio.create_task(record(database, tenant.id, "late"))
    await until_waiting(database, late)
    go_on.set()
    assert await step
    await asyncio.wait_for(late, DEADLINE_SECONDS)

    state = await seen(database, hook["id"], tenant.id)
    assert state.cursor == state.head - 1  # up to "seen"; "late" came after
    assert state.due
    monkeypatch.undo()
    while await dispatch_once(database, dispatcher):
        pass
    state = await seen(database, hook["id"], tenant.id)
    assert (state.cursor, state.due) == (state.head, False)
    assert [seq for seq, _, _ in state.deliveries] == [state.head - 1, state.head]


async def test_an_append_in_flight_is_read_by_the_dispatcher(
    postgres: tuple[Database, httpx.AsyncClient],
) -> None:
    """PostgreSQL: an append that holds the tenant's head when the dispatcher begins commits
    first, and its event is dispatched in that same step."""
    database, client = postgres
    tenant = await Factory(database, TEST_SECRET.encode()).tenant()
    hook = await create_webhook(client, tenant, "https://hooks.example.invalid/", ["thing.*"])
    dispatcher = Dispatcher(concurrency=1, lease_seconds=30)
    lease = await lease_one(database)  # due: its creation's event
    assert lease is not None
    async with database.transaction() as session:
        await append(session, tenant.id, platform_event("thing.changed", "thing", "in-flight"))
        step = asyncio.create_task(work(database, dispatcher, lease))
        await until_waiting(database, step)
    await asyncio.wait_for(step, DEADLINE_SECONDS)
    state = await seen(database, hook["id"], tenant.id)
    assert (state.cursor, state.due) == (state.head, False)
    assert [event_type for _, event_type, _ in state.deliveries] == ["thing.changed"]


async def test_an_event_makes_its_webhook_due_at_once_though_this_clock_runs_ahead(
    api: httpx.AsyncClient,
    factory: Factory,
    database: Database,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The anchored clock may run ahead of the database's by half a round trip (more on a
    loaded machine): a dispatcher woken by the commit must still find the webhook due."""
    tenant = await factory.tenant()
    hook = await create_webhook(api, tenant, "https://hooks.example.invalid/", ["thing.*"])
    dispatcher = Dispatcher(concurrency=1, lease_seconds=30, batch=10)
    while await dispatch_once(database, dispatcher):
        pass
    behind = database.clock.anchored_now
    monkeypatch.setattr(database.clock, "anchored_now", lambda: behind() + timedelta(seconds=5))
    await record(database, tenant.id, "ahead")
    assert await dispatch_once(database, dispatcher), "the webhook was not due at once"
    assert (await seen(database, hook["id"], tenant.id)).deliveries[-1][1] == "thing.changed"
