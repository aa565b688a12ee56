"""What a change's wake-up hint reaches: this process's runners, and other processes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from sqlalchemy.engine import make_url

from tenantplane.reconcile.hints import wakeups
from tenantplane.reconcile.listener import listen


@dataclass
class WakeUps:
    local: asyncio.Event
    # PostgreSQL: set when another process's listener hears the NOTIFY (None on SQLite).
    remote: asyncio.Event | None = None
    heard: list[str] = field(default_factory=list)

    async def delivered(self) -> None:
        """Until another process has heard the hint (PostgreSQL; at once on SQLite)."""
        if self.remote is not None:
            await asyncio.wait_for(self.remote.wait(), 30)


@asynccontextmanager
async def wake_ups(database_url: str, name: str) -> AsyncIterator[WakeUps]:
    """Records the hints for reconciler ``name`` while the block runs."""
    local = wakeups.subscribe(name)
    if make_url(database_url).get_backend_name() != "postgresql":
        try:
            yield WakeUps(local)
        finally:
            wakeups.unsubscribe(name, local)
        return
    found = WakeUps(local, asyncio.Event())

    def heard(payload: str) -> None:
        found.heard.append(payload)
        if payload == name and found.remote is not None:
            found.remote.set()

    ready = asyncio.Event()
    listening = asyncio.create_task(listen(database_url, heard, ready))
    try:
        await asyncio.wait_for(ready.wait(), 30)
        yield found
    finally:
        wakeups.unsubscribe(name, local)
        listening.cancel()
        await asyncio.gather(listening, return_exceptions=True)
