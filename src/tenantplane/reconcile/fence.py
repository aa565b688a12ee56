"""Fencing: a worker proves it still holds its lease before every side effect.

A lease guards what a worker *records* (``LeaseGuard``), but a worker also acts on the
outside world between its lease and its apply (a charge, a copy written into a cluster, a
Helm release). One that froze or stalled past its lease and wakes up must not act: another
worker has the row now, or it was deleted and cleaned up, and a late write would undo that
work (a deleted secret copied back into a cluster, an invoice charged twice).

So ``act`` receives the lease's ``Fence`` and holds it before each remote write:
``await fence.hold()`` renews the lease for a full term *only if* the row still carries
this lease's token and the lease has not lapsed by the database's clock, in one statement,
and raises ``LeaseLost`` otherwise. After it, no other worker can take the row for a whole
term, so the write that follows lands before anyone else may act. An outside world kept in
this database (the simulators) does better: it writes inside ``async with fence.held() as
session``, whose renewal takes the row's lock, so the check and the write commit together
and no late write is possible at all. Anything a successor must know about a write that
may have happened (an intended charge, a copy that may exist) is recorded in the same
fenced statement (``hold(**values)``) before the call.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from typing import Any, Protocol

from sqlalchemy import and_, func, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.db.clock import database_now
from tenantplane.db.engine import Database
from tenantplane.reconcile.lease import Lease, row_key


class LeaseLost(Exception):
    """The lease is no longer held (it lapsed, another worker took the row, or the row is
    gone): the act must not touch the outside world, and its outcome is discarded."""


class WriteFence(Protocol):
    """What an adapter needs of a fence: ``hold`` before a remote write, ``hold_in`` the
    transaction of a write kept in this database."""

    async def hold(self, **values: Any) -> None: ...

    async def hold_in(self, session: AsyncSession, **values: Any) -> None: ...


class Unfenced:
    """For a caller that holds no lease (a test or an operator acting on a resource
    directly): every hold succeeds and writes nothing."""

    async def hold(self, **values: Any) -> None:
        return None

    async def hold_in(self, session: AsyncSession, **values: Any) -> None:
        return None


UNFENCED = Unfenced()


class Fence:
    """What an ``act`` holds its lease with before each side effect."""

    def __init__(self, database: Database, lease: Lease, duration: timedelta) -> None:
        self.database = database
        self.lease = lease
        self.duration = duration

    @property
    def token(self) -> str:
        """The fencing token: this lease's (shared by the rows of one fetch; with the row's
        key it names this lease alone)."""
        return self.lease.token

    async def hold(self, **values: Any) -> None:
        """Renew the lease for a full term from now, and write ``values`` on the row in the
        same statement, only if the lease still holds the row and has not lapsed; raise
        ``LeaseLost`` otherwise. On PostgreSQL one statement in autocommit."""
        async with self.database.statements() as session:
            await self.hold_in(session, **values)

    @contextlib.asynccontextmanager
    async def held(self, **values: Any) -> AsyncIterator[AsyncSession]:
        """A transaction that begins with ``hold_in``: what is written in it commits only
        together with the proof that the lease is held, and no other worker can take the row
        (nor the API delete it) until it does."""
        async with self.database.transaction() as session:
            await self.hold_in(session, **values)
            yield session

    async def hold_in(self, session: AsyncSession, **values: Any) -> None:
        """``hold`` in ``session``'s transaction (its row lock is kept until it ends)."""
        table = self.lease.table
        now = await _now_in(self.database, session)
        statement = (
            update(table)
            .where(
                and_(
                    row_key(table) == self.lease.row_id,
                    table.c.lock_token == self.lease.token,
                    table.c.lock_expires_at > now,
                )
            )
            .values(lock_expires_at=now + self.duration, **values)
        )
        result = await session.execute(statement)
        if not result.rowcount:  # type: ignore[attr-defined]
            raise self.lost()

    def lost(self) -> LeaseLost:
        return LeaseLost(f"{self.lease.table.name} {self.lease.row_id}: lease lost")


async def _now_in(database: Database, session: AsyncSession) -> Any:
    """Now by the database's clock, inside the statement on PostgreSQL (no round trip)."""
    return await database_now(session) if database.is_sqlite else func.now()


async def hold_each(fences: Sequence[Fence]) -> list[LeaseLost | None]:
    """``hold`` for the fences of one batch (one database, one table) in one statement, for
    one call made for them all: None for each lease still held (and renewed), a
    ``LeaseLost`` for each lost."""
    if not fences:
        return []
    database, table = fences[0].database, fences[0].lease.table
    key = row_key(table)
    async with database.statements() as session:
        now = await _now_in(database, session)
        statement = (
            update(table)
            .where(
                tuple_(key, table.c.lock_token).in_(
                    [(fence.lease.row_id, fence.lease.token) for fence in fences]
                ),
                table.c.lock_expires_at > now,
            )
            .values(lock_expires_at=now + fences[0].duration)
            .returning(key)
        )
        held = set((await session.execute(statement)).scalars().all())
    return [None if fence.lease.row_id in held else fence.lost() for fence in fences]
