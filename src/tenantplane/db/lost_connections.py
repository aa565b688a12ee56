"""A server that ended one connection ended them all: every pool of the process learns it.

A PostgreSQL restart (or a failover) ends every connection. No pool pings a connection at
checkout (a round trip per request, db/engine.py), so a dead connection is found when a
statement fails on it, and that request answers 503 ``DATABASE_UNAVAILABLE``. A process has
two pools (the sessions', the plain reads'), and a request may use both: without this,
each pool would fail one request of its own before it knew, and an API key looked up by a
plain read then a session would fail twice in a row.

So the first failure is told to both (``ServerLoss.noticed``): the psycopg pool of the plain
reads checks its idle connections at once (a round trip each, only then), and the sessions'
pool replaces every connection opened before the failure as it is next checked out.
"""

from __future__ import annotations

import math
import time
from typing import Any

from sqlalchemy import event
from sqlalchemy.exc import InvalidatePoolError
from sqlalchemy.ext.asyncio import AsyncEngine

# When a pooled connection of the sessions' engine was opened (its record's ``info``).
_OPENED_AT = "tenantplane.opened_at"
# Failures noticed within this long of the first are the same loss: many requests in flight
# fail together, and each telling the pools again would only replace fresh connections.
SAME_LOSS_SECONDS = 1.0


class ServerLoss:
    """When this process last learned that the server had ended its connections."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._lost_at = -math.inf
        pool = engine.sync_engine.pool
        event.listen(pool, "connect", self._on_connect)
        event.listen(pool, "checkout", self._on_checkout)

    def noticed(self) -> bool:
        """Record a loss found now; False when it is one already recorded (see above)."""
        now = time.monotonic()
        if now - self._lost_at < SAME_LOSS_SECONDS:
            return False
        self._lost_at = now
        return True

    @staticmethod
    def _on_connect(_: Any, record: Any) -> None:
        record.info[_OPENED_AT] = time.monotonic()

    def _on_checkout(self, _: Any, record: Any, __: Any) -> None:
        if record.info.get(_OPENED_AT, math.inf) <= self._lost_at:
            # SQLAlchemy's documented way: it invalidates every connection of the pool
            # older than now and checks out a new one in its place.
            raise InvalidatePoolError("the server ended this process's connections")
