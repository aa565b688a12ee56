"""At least once, and at most one duplicate: a delivery is leased like all reconciler work.
A worker that dies after sending (before it recorded the attempt) leaves the delivery to
the next, which sends the same message again (the same ``webhook-id``); a worker that
stalled past its lease sends nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Table

from tenantplane.config import Settings
from tenantplane.db.engine import Database
from tenantplane.event.webhook.delivery import DeliveryReconciler, build_delivery_reconciler
from tenantplane.event.webhook.models import WebhookDelivery
from tenantplane.reconcile.fence import LeaseLost
from tenantplane.reconcile.fetcher import Fetcher
from tenantplane.reconcile.registry import ReconcileContext
from tests.cluster.polling import poll
from tests.conftest import make_settings
from tests.event.webhook.conftest import LOOPBACK_ALLOWED, create_webhook
from tests.event.webhook.receiver import Receiver
from tests.factories import Factory, expire_lease, fence_of
from tests.http_client import api_client, bearer, running_app

DELIVERIES: Table = WebhookDelivery.__table__  # type: ignore[assignment]


@pytest.fixture
async def paused(
    database: Database, database_url: str, tmp_path: Path
) -> AsyncIterator[tuple[httpx.AsyncClient, DeliveryReconciler, Settings]]:
    """The API without reconcilers, and a delivery reconciler to drive by hand."""
    settings = make_settings(database_url, tmp_path, run_reconcilers=False, **LOOPBACK_ALLOWED)
    context = ReconcileContext(settings, database)
    reconciler = build_delivery_reconciler(context)
    assert isinstance(reconciler, DeliveryReconciler)
    async with running_app(settings) as app, api_client(app) as client:
        yield client, reconciler, settings
    await context.aclose()


async def ping(client: httpx.AsyncClient, tenant: Any, hook: dict[str, Any]) -> dict[str, Any]:
    answer = await client.post(
        f"{tenant.path}/webhooks/{hook['id']}/ping", headers=bearer(tenant.admin_key)
    )
    assert answer.status_code == 202, answer.text
    made: dict[str, Any] = answer.json()
    return made


async def test_a_worker_dying_after_the_send_duplicates_that_delivery_only(
    paused: tuple[httpx.AsyncClient, DeliveryReconciler, Settings],
    factory: Factory,
    database: Database,
    receiver: Receiver,
) -> None:
    client, reconciler, settings = paused
    tenant = await factory.tenant()
    hook = await create_webhook(client, tenant, f"{receiver.url}/once", ["nothing.here"])
    delivery = await ping(client, tenant, hook)

    # The first worker sends, then dies before it records anything.
    [lease] = await Fetcher(database, DELIVERIES, "dies").lease(1, timedelta(seconds=60))
    async with database.statements() as session:
        snapshot = await reconciler.load(session, lease.row_id)
    assert snapshot is not None
    answer = await reconciler.act(snapshot, fence_of(database, lease))
    assert answer.status_code == 200
    await expire_lease(database, lease)

    # A worker (the app's reconcilers) takes the delivery over and sends it again.
    working = settings.model_copy(update={"run_reconcilers": True})
    async with running_app(working) as app, api_client(app) as again:
        done = await poll(
            again,
            f"{tenant.path}/webhooks/{hook['id']}/deliveries/{delivery['id']}",
            bearer(tenant.admin_key),
            lambda response: response.json()["state"] == "succeeded",
            "the delivery taken over",
        )
    requests = receiver.at("/once")
    assert len(requests) == 2
    assert {request.id for request in requests} == {delivery["eventId"]}
    assert requests[0].body == requests[1].body
    assert done.json()["attempts"] == 1  # the attempt that was recorded


async def test_a_worker_that_stalled_past_its_lease_sends_nothing(
    paused: tuple[httpx.AsyncClient, DeliveryReconciler, Settings],
    factory: Factory,
    database: Database,
    receiver: Receiver,
) -> None:
    client, reconciler, _ = paused
    tenant = await factory.tenant()
    hook = await create_webhook(client, tenant, f"{receiver.url}/stalled", ["nothing.here"])
    await ping(client, tenant, hook)
    [stalled] = await Fetcher(database, DELIVERIES, "stalled").lease(1, timedelta(seconds=60))
    async with database.statements() as session:
        snapshot = await reconciler.load(session, stalled.row_id)
    assert snapshot is not None
    await expire_lease(database, stalled)
    [taken] = await Fetcher(database, DELIVERIES, "successor").lease(1, timedelta(seconds=60))
    assert taken.row_id == stalled.row_id
    with pytest.raises(LeaseLost):
        await reconciler.act(snapshot, fence_of(database, stalled))
    assert receiver.at("/stalled") == []
