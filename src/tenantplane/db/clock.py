"""The database's clock: the one clock every process agrees on.

Every time that orders work or is shown to a client (``createdAt``, ``reconcile_at``, a
cluster's history, conditions, due times, the simulator's steps, lease expiry) is the
database's time, never a process's: an API replica or a worker whose clock runs ahead (a
machine whose NTP failed) must neither stamp the future nor leave due work waiting, and
one that runs behind must not stamp the past, or rows it writes sort before older ones.

Three ways to it:

- ``now()`` in the statement that writes (leases, ``ready``): no round trip of its own;
- ``DatabaseClock.now``: the database's time read once plus the time this process has
  measured since on its monotonic clock (which no change of the wall clock moves), read
  again by a new pooled connection, or in the background, once it is a minute old: no
  round trip on a request path. Its error is half the round trip of the reading (well
  under a millisecond on a local network) plus the monotonic clock's drift since (parts
  per million). Where a value must be known in Python (an API answer that shows
  ``createdAt``, a condition's time in a JSON document, an expiry decided in the request
  path), this is the clock;
- ``database_now``: a round trip of its own, for a step that must have the exact time of
  its transaction.

SQLite lives in one machine's file, so the database's clock is that machine's clock; there
both are ``utcnow()``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from sqlalchemy import ColumnElement, event, func, select
from sqlalchemy.engine.default import DefaultExecutionContext
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from tenantplane.db.base import utcnow

# Where a session (``Session.info``) and a pooled connection (its record's ``info``) keep
# their database's clock.
CLOCK = "tenantplane.clock"
# The anchor is read again, in the background, once it is this old.
REANCHOR_SECONDS = 60.0
# A reading whose round trip took longer than this does not replace a good anchor: its
# error (half the round trip) would be larger than the drift it corrects.
MAX_ROUND_TRIP_SECONDS = 0.5
# clock_timestamp(), not now(): now() is the start of the reading's transaction.
_CLOCK_TIMESTAMP = "SELECT clock_timestamp()"

logger = structlog.get_logger(__name__)


class ClockUnanchored(PoolTimeout):
    """The database's time is needed where it cannot be read (a column default) before the
    process has read it once: it has had no connection to the database yet. Answered like a
    connection that could not be had (503 ``DATABASE_UNAVAILABLE``, db/errors.py) rather
    than stamped with the process's own clock."""


@dataclass(frozen=True)
class _Anchor:
    at: datetime  # the database's time…
    monotonic: float  # …at this moment of this process's monotonic clock
    uncertainty: float  # half the round trip of the reading, in seconds


class DatabaseClock:
    """Now by the database's clock without asking it each time (see the module)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._machine = engine.dialect.name == "sqlite"
        self._anchor: _Anchor | None = None
        self._refreshing: asyncio.Task[None] | None = None
        self._first: asyncio.Task[None] | None = None
        event.listen(engine.sync_engine, "connect", self._on_connect)

    @property
    def anchored(self) -> bool:
        return self._machine or self._anchor is not None

    async def now(self) -> datetime:
        """Now by the database's clock. Read from the database (a round trip) only the first
        time in a process that has not yet had a connection to it: the API reads it at
        startup, before it serves, and every new pooled connection reads it as it opens."""
        if not self.anchored:
            await self._reading()
        return self.anchored_now()

    def anchored_now(self) -> datetime:
        """``now`` where nothing can be awaited (a column default, whose connection read the
        clock as it opened); ``ClockUnanchored`` if it was never read."""
        if self._machine:
            return utcnow()
        anchor = self._anchor
        if anchor is None:
            self._refresh_soon()
            raise ClockUnanchored("the database's clock has not been read yet")
        elapsed = time.monotonic() - anchor.monotonic
        if elapsed > REANCHOR_SECONDS:
            self._refresh_soon()
        return anchor.at + timedelta(seconds=elapsed)

    def _stale(self) -> bool:
        anchor = self._anchor
        return anchor is None or time.monotonic() - anchor.monotonic > REANCHOR_SECONDS

    async def anchor(self) -> None:
        """Read the database's time now (a round trip: at startup, or in the background)."""
        if self._machine:
            return
        async with self._engine.connect() as connection:
            sent = time.monotonic()
            at = (await connection.exec_driver_sql(_CLOCK_TIMESTAMP)).scalar_one()
            received = time.monotonic()
        self._observe(at, sent, received)

    async def anchor_or_log(self) -> None:
        """``anchor``, but a database that cannot be reached is only logged: the first
        pooled connection reads the clock when it opens."""
        try:
            await self.anchor()
        except Exception as exc:  # any failure: the next pooled connection reads it
            logger.warning("database clock not read", error=type(exc).__name__)

    def _observe(self, at: datetime, sent: float, received: float) -> None:
        uncertainty = (received - sent) / 2
        current = self._anchor
        if (
            current is not None
            and uncertainty > MAX_ROUND_TRIP_SECONDS / 2
            and uncertainty > current.uncertainty
        ):
            return
        # The reading was taken somewhere during the round trip: its middle is the estimate.
        self._anchor = _Anchor(at.astimezone(UTC), sent + uncertainty, uncertainty)

    def _on_connect(self, dbapi_connection: Any, record: Any) -> None:
        """Every pooled connection carries the clock (column defaults find it there) and,
        on PostgreSQL, reads it as it opens if it was never read or is old: a process's
        first connection anchors it before any statement of its own is sent."""
        record.info[CLOCK] = self
        if self._machine or not self._stale():
            return
        cursor = dbapi_connection.cursor()
        try:
            sent = time.monotonic()
            cursor.execute(_CLOCK_TIMESTAMP)
            (at,) = cursor.fetchone()
            received = time.monotonic()
        finally:
            cursor.close()
            # The reading began a transaction: its now() must not be the next one's.
            dbapi_connection.rollback()
        self._observe(at, sent, received)

    async def _reading(self) -> None:
        """Read the clock once for every caller that waits on it (not once each)."""
        if self._first is None or self._first.done():
            self._first = asyncio.get_running_loop().create_task(self.anchor())
        # Shielded: a caller that is cancelled does not cancel the others' reading.
        await asyncio.shield(self._first)

    def _refresh_soon(self) -> None:
        """Read the anchor again in the background (never in the caller's path)."""
        if self._refreshing is not None and not self._refreshing.done():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._refreshing = loop.create_task(self.anchor_or_log())


def clock_of(session: AsyncSession) -> DatabaseClock:
    """The clock of the database ``session`` belongs to (set by tenantplane.db.engine)."""
    clock: DatabaseClock = session.info[CLOCK]
    return clock


def database_time(context: DefaultExecutionContext) -> datetime:
    """A column default: now by the database's clock of the connection inserting the row."""
    clock: DatabaseClock = context.root_connection.info[CLOCK]
    return clock.anchored_now()


def due_now(session: AsyncSession) -> datetime | ColumnElement[datetime]:
    """Now, for a row made due at once, as leases compare it (reconcile/fetcher.py):
    PostgreSQL's ``now()`` in the statement (the transaction's start: never later than a
    look that follows the commit), the machine's clock on SQLite. The anchored clock may run
    ahead of the database's by up to half a round trip: a row marked with it could be found
    not yet due by a reconciler woken at the commit, which would look again only later."""
    if session.get_bind().dialect.name != "postgresql":
        return utcnow()
    return func.now()


async def database_now(session: AsyncSession) -> datetime:
    """Now, by the database's clock (PostgreSQL: the start of the session's transaction)."""
    if session.get_bind().dialect.name != "postgresql":
        return utcnow()
    value: datetime = (await session.execute(select(func.now()))).scalar_one()
    return value.astimezone(UTC)
