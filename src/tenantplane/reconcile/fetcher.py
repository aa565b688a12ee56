"""The fetcher: lease a batch of ready rows in one short transaction, and renew leases.

Every time here is the database's (``database_now``), never this process's clock: a worker
whose clock runs ahead would otherwise take rows whose leases are still live.
"""

from __future__ import annotations

import asyncio
import functools
import secrets
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Integer, Interval, bindparam, func, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.dml import ReturningUpdate
from sqlalchemy.sql.schema import Table

from tenantplane.db.clock import database_now
from tenantplane.db.engine import Database
from tenantplane.reconcile.lease import Lease, ready_condition, released, row_key


class Fetcher:
    """Leases ready rows of one table for one owner.

    PostgreSQL: ``SELECT … FOR UPDATE SKIP LOCKED`` so that any number of workers share the
    table without waiting on each other. SQLite has no row locks: its transactions begin with
    ``BEGIN IMMEDIATE`` (one writer at a time, even across processes), and an in-process lock
    keeps this process's fetches from queueing behind each other.
    """

    def __init__(self, database: Database, table: Table, owner: str) -> None:
        self.database = database
        self.table = table
        self.owner = owner
        self._local_lock = asyncio.Lock()

    async def lease(self, limit: int, duration: timedelta) -> list[Lease]:
        if limit <= 0:
            return []
        if self.database.is_sqlite:
            async with self._local_lock:
                return await self._lease(limit, duration)
        return await self._lease(limit, duration)

    async def _lease(self, limit: int, duration: timedelta) -> list[Lease]:
        # PostgreSQL: one statement in autocommit, no BEGIN and COMMIT round trips around it.
        async with self.database.statements() as session:
            return await self.lease_in(session, limit, duration)

    async def lease_in(self, session: AsyncSession, limit: int, duration: timedelta) -> list[Lease]:
        """Lease up to ``limit`` ready rows in ``session``'s transaction: they are leased
        once it commits, and a rollback leaves them as they were."""
        if not self.database.is_sqlite:
            return await self._lease_in_one_statement(session, limit, duration)
        table = self.table
        key = row_key(table)
        token = secrets.token_hex(16)
        now = await database_now(session)
        expires_at = now + duration
        candidates = (
            select(key, table.c.lock_owner)
            .where(ready_condition(table, now))
            .order_by(table.c.reconcile_at, key)
            .limit(limit)
        )
        # A ready row still naming an owner has an expired lease: it is being taken over.
        rows = (await session.execute(candidates)).all()
        previous: dict[Any, str | None] = {row_id: owner for row_id, owner in rows}
        ids = list(previous)
        if not ids:
            return []
        await session.execute(
            update(table)
            .where(key.in_(ids))
            .values(lock_owner=self.owner, lock_token=token, lock_expires_at=expires_at)
        )
        return [
            Lease(table, row_id, token, self.owner, expires_at, now, previous[row_id])
            for row_id in ids
        ]

    async def _lease_in_one_statement(
        self, session: AsyncSession, limit: int, duration: timedelta
    ) -> list[Lease]:
        """PostgreSQL: pick and lease the rows in one UPDATE, with the time and the previous
        owners in its RETURNING: one round trip instead of three (now, SELECT, UPDATE).
        ``now()`` is the statement's transaction's start, the same instant for the pick,
        the expiry and the time returned."""
        token = secrets.token_hex(16)
        parameters = {"limit": limit, "owner": self.owner, "token": token, "duration": duration}
        rows = (await session.execute(self._lease_statement, parameters)).all()
        return [
            Lease(
                self.table,
                row_id,
                token,
                self.owner,
                _aware(leased_at) + duration,
                _aware(leased_at),
                previous,
            )
            for row_id, previous, leased_at in rows
        ]

    @functools.cached_property
    def _lease_statement(self) -> ReturningUpdate[Any]:
        """``_lease_in_one_statement``'s UPDATE, built once: its parameters are ``limit``,
        ``owner``, ``token`` and ``duration``.

        The pick is a MATERIALIZED CTE, run once per statement. As a subquery joined in the
        UPDATE, the planner may put it on the inner side of a nested loop and run it again
        for each row of the table: every run skips the rows this statement already updated
        (a row locked FOR UPDATE after its own command changed it is skipped) and takes
        ``limit`` more, so one look leased every ready row (10 rows with a limit of 4, found
        by the concurrency tests on PostgreSQL in CI)."""
        table = self.table
        key = row_key(table)
        now = func.now()
        picked = (
            select(key.label("picked_id"), table.c.lock_owner.label("previous_owner"))
            .where(ready_condition(table, now))
            .order_by(table.c.reconcile_at, key)
            .limit(bindparam("limit", type_=Integer))
            .with_for_update(skip_locked=True)
            .cte("picked")
            .prefix_with("MATERIALIZED")
        )
        return (
            update(table)
            .where(key == picked.c.picked_id)
            .values(
                lock_owner=bindparam("owner"),
                lock_token=bindparam("token"),
                lock_expires_at=now + bindparam("duration", type_=Interval),
            )
            .returning(key, picked.c.previous_owner, now)
        )

    async def back_off_unheld(self, row_ids: Sequence[Any], seconds: float) -> None:
        """Make rows still ready (due, no live lease) due in ``seconds``: rows leased in a
        transaction that rolled back (their lease went with it), left alone if another
        worker leased them since."""
        table = self.table
        async with self.database.transaction() as session:
            now = await database_now(session)
            await session.execute(
                update(table)
                .where(row_key(table).in_(row_ids), ready_condition(table, now))
                .values(reconcile_at=now + timedelta(seconds=seconds), **released())
            )

    async def renew(self, lease: Lease, duration: timedelta) -> bool:
        """Extend a lease still held to ``duration`` from now (False: it was lost)."""
        table = self.table
        async with self.database.transaction() as session:
            now = await database_now(session)
            result = await session.execute(
                update(table)
                .where(row_key(table) == lease.row_id, table.c.lock_token == lease.token)
                .values(lock_expires_at=now + duration)
            )
        return bool(result.rowcount)  # type: ignore[attr-defined]

    async def renew_many(self, leases: Sequence[Lease], duration: timedelta) -> set[Any]:
        """Extend every lease of ``leases`` still held to ``duration`` from now, in one
        statement; return the keys of the rows whose lease was renewed (the others were lost)."""
        if not leases:
            return set()
        table = self.table
        key = row_key(table)
        held = tuple_(key, table.c.lock_token).in_(
            [(lease.row_id, lease.token) for lease in leases]
        )
        if self.database.is_sqlite:
            async with self.database.transaction() as session:
                now = await database_now(session)
                statement = (
                    update(table).where(held).values(lock_expires_at=now + duration).returning(key)
                )
                return set((await session.execute(statement)).scalars().all())
        statement = (
            update(table).where(held).values(lock_expires_at=func.now() + duration).returning(key)
        )
        async with self.database.statements() as session:
            return set((await session.execute(statement)).scalars().all())

    async def seconds_until_due(self) -> float | None:
        """How long until the earliest row not held by a live lease becomes ready, by the
        database's clock (for sleeping); None when nothing is scheduled."""
        table = self.table
        unleased = select(func.min(table.c.reconcile_at)).where(
            table.c.reconcile_at.is_not(None), table.c.lock_token.is_(None)
        )
        # A held lease whose holder died becomes ready when it expires.
        expiring = select(func.min(table.c.lock_expires_at)).where(
            table.c.reconcile_at.is_not(None), table.c.lock_token.is_not(None)
        )
        # One statement: the round trips, not the aggregates, are what this costs (in
        # autocommit on PostgreSQL: no BEGIN and ROLLBACK around it).
        # On SQLite a read-only session: no write turn for a read.
        sessions = self.database.reader if self.database.is_sqlite else self.database.statements
        async with sessions() as session:
            if self.database.is_sqlite:
                now = await database_now(session)
                first, second = (
                    await session.execute(
                        select(unleased.scalar_subquery(), expiring.scalar_subquery())
                    )
                ).one()
            else:
                now, first, second = (
                    await session.execute(
                        select(func.now(), unleased.scalar_subquery(), expiring.scalar_subquery())
                    )
                ).one()
                now = _aware(now)
        candidates = [_aware(value) for value in (first, second) if value is not None]
        if not candidates:
            return None
        return max((min(candidates) - now).total_seconds(), 0.0)


def _aware(value: datetime) -> datetime:
    # Aggregates bypass the column type on SQLite and come back naive (they are UTC).
    from datetime import UTC

    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
