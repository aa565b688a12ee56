"""The asynchronous events and webhooks groups; ``_sync_events.py`` is generated from this
file."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from tenantplane_client import following
from tenantplane_client import models as m
from tenantplane_client._async_clusters import _Api
from tenantplane_client._common import _segment
from tenantplane_client.following import EventType


class AsyncEvents(_Api):
    """The tenant's event stream (docs/events.md): audit and platform events, newest first."""

    @property
    def path(self) -> str:
        return f"{self.client.tenant_path}/events"

    def iter(
        self,
        *,
        type: EventType | None = None,  # noqa: A002 (the API's name)
        action: str | None = None,
        kind: str | None = None,
        name: str | None = None,
        actor: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[m.EventRead]:
        """The events that match, newest first, a page at a time (the client's
        ``page_size``); at most ``limit``. ``action`` is exact or a prefix ending in ``*``
        (``cluster.*``); ``actor`` an email or a key id; ``since`` and ``until`` (inclusive)
        aware datetimes or RFC 3339 strings."""
        query = following.event_query(
            type=type, action=action, kind=kind, name=name, actor=actor, since=since, until=until
        )
        return self.client.items(m.EventPage, self.path, query, limit=limit)

    async def follow(
        self,
        *,
        type: EventType | None = None,  # noqa: A002 (the API's name)
        action: str | None = None,
        kind: str | None = None,
        name: str | None = None,
        actor: str | None = None,
        since: datetime | str | None = None,
        interval: float = 1.0,
        max_interval: float = 10.0,
        on_ready: Callable[[], object] | None = None,
    ) -> AsyncIterator[m.EventRead]:
        """The events that match as they arrive, oldest first, each once, until the caller
        stops iterating: those after the newest one when it starts, or with ``since``, every
        one from then on. Polls every ``interval`` seconds while events come, doubling the
        wait on each poll that finds none up to ``max_interval`` (following.py).
        ``on_ready`` is called once the start is fixed: every event that commits after it
        is yielded."""
        cursor = following.Cursor(
            following.event_query(type=type, action=action, kind=kind, name=name, actor=actor),
            since=None if since is None else following.instant(since),
        )
        backoff = following.Backoff(interval, max_interval)
        if since is None:
            pages = self.client.items(m.EventPage, self.path, cursor.filters, limit=1)
            newest = [event async for event in pages]
            cursor.start_after(newest[0] if newest else None)
        if on_ready is not None:
            on_ready()
        while True:
            arrived = cursor.take(await self.newer(cursor))
            for event in arrived:
                yield event
            await asyncio.sleep(backoff.wait(bool(arrived)))

    async def newer(self, cursor: following.Cursor) -> list[m.EventRead]:
        """One poll: the events before the cursor's anchor, newest first."""
        params = cursor.query(self.client.page_size)
        found: list[m.EventRead] = []
        while True:
            page: m.EventPage = await self.client.call(
                m.EventPage, "GET", f"{self.path}?{urlencode(params)}"
            )
            for event in page.items:
                if cursor.reached(event):
                    return found
                found.append(event)
            if page.continue_ is None:
                return found
            params = {**params, "continue": page.continue_, "limit": str(self.client.page_size)}

    # Last: below it, `list` in a signature of this class would name the method.
    async def list(
        self,
        *,
        type: EventType | None = None,  # noqa: A002 (the API's name)
        action: str | None = None,
        kind: str | None = None,
        name: str | None = None,
        actor: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        limit: int | None = None,
    ) -> list[m.EventRead]:
        """``iter``'s events as a list (newest first)."""
        events = self.iter(
            type=type,
            action=action,
            kind=kind,
            name=name,
            actor=actor,
            since=since,
            until=until,
            limit=limit,
        )
        return [event async for event in events]


class AsyncWebhooks(_Api):
    """Subscriptions to the tenant's events, signed per Standard Webhooks (docs/webhooks.md);
    admins only."""

    @property
    def path(self) -> str:
        return f"{self.client.tenant_path}/webhooks"

    def iter(self) -> AsyncIterator[m.WebhookRead]:
        """Every webhook, oldest first, a page at a time (the client's ``page_size``)."""
        return self.client.items(m.PagedListWebhookRead, self.path)

    async def get(self, webhook_id: str) -> m.WebhookRead:
        result: m.WebhookRead = await self.client.call(m.WebhookRead, "GET", self.item(webhook_id))
        return result

    async def create(self, body: m.WebhookCreate | Mapping[str, Any]) -> m.WebhookWithSecret:
        """``{url, events, description?, enabled?}``; the answer's ``secret`` (``whsec_…``)
        is shown this once: keep it where the receiver can read it."""
        result: m.WebhookWithSecret = await self.client.call(
            m.WebhookWithSecret, "POST", self.path, body=body
        )
        return result

    async def update(
        self,
        webhook_id: str,
        body: m.WebhookUpdate | Mapping[str, Any],
        *,
        if_match: str | None = None,
    ) -> m.WebhookRead:
        """Change the fields given (``url``, ``events``, ``description``, ``enabled``)."""
        headers = {"If-Match": if_match} if if_match else None
        result: m.WebhookRead = await self.client.call(
            m.WebhookRead, "PATCH", self.item(webhook_id), body=body, headers=headers
        )
        return result

    async def delete(self, webhook_id: str, *, if_match: str | None = None) -> None:
        headers = {"If-Match": if_match} if if_match else None
        await self.client.request("DELETE", self.item(webhook_id), headers=headers)

    async def rotate_secret(
        self, webhook_id: str, *, if_match: str | None = None
    ) -> m.WebhookWithSecret:
        """A new signing secret, shown this once; the old one signs too for 24 hours. Retried
        under its Idempotency-Key as every POST: the server answers a repeat with the first
        answer (the same secret) and rotates nothing more."""
        headers = {"If-Match": if_match} if if_match else None
        result: m.WebhookWithSecret = await self.client.call(
            m.WebhookWithSecret,
            "POST",
            f"{self.item(webhook_id)}/rotate-secret",
            headers=headers,
        )
        return result

    async def ping(self, webhook_id: str) -> m.DeliveryRead:
        """Send a signed ``webhook.ping`` message; the answer is its delivery."""
        result: m.DeliveryRead = await self.client.call(
            m.DeliveryRead, "POST", f"{self.item(webhook_id)}/ping"
        )
        return result

    def iter_deliveries(
        self, webhook_id: str, *, limit: int | None = None
    ) -> AsyncIterator[m.DeliveryRead]:
        """The webhook's deliveries, newest first, a page at a time; at most ``limit``."""
        return self.client.items(
            m.PagedListDeliveryRead, f"{self.item(webhook_id)}/deliveries", limit=limit
        )

    async def list_deliveries(
        self, webhook_id: str, *, limit: int | None = None
    ) -> list[m.DeliveryRead]:
        return [item async for item in self.iter_deliveries(webhook_id, limit=limit)]

    async def get_delivery(self, webhook_id: str, delivery_id: str) -> m.DeliveryDetail:
        """One delivery with every attempt (``history``)."""
        result: m.DeliveryDetail = await self.client.call(
            m.DeliveryDetail,
            "GET",
            f"{self.item(webhook_id)}/deliveries/{_segment(delivery_id)}",
        )
        return result

    async def redeliver(self, webhook_id: str, delivery_id: str) -> m.DeliveryRead:
        """Send a delivery's message again (the same ``webhook-id`` and body) as a new
        delivery, which is answered."""
        result: m.DeliveryRead = await self.client.call(
            m.DeliveryRead,
            "POST",
            f"{self.item(webhook_id)}/deliveries/{_segment(delivery_id)}/redeliver",
        )
        return result

    # Last: below it, `list` in a signature of this class would name the method.
    async def list(self) -> list[m.WebhookRead]:
        return [item async for item in self.iter()]
