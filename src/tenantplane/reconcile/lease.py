"""Leases on rows that a reconciler drives: the mixin, and the guard that applies results.

A row is *ready* when ``reconcile_at`` is due and no live lease holds it. The fetcher leases
ready rows (owner, token, expiry); the worker applies what it observed only through a
``LeaseGuard``, whose statements carry ``WHERE id = … AND lock_token = …``. When the guard
matches no row the lease was lost (expired and taken by another worker, or the row was
deleted): the result is stale and is discarded, never written over newer state.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, String, TextualSelect, and_, delete, or_, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, declared_attr, mapped_column
from sqlalchemy.sql.schema import Table

from tenantplane.db.base import UTCDateTime
from tenantplane.db.clock import database_now
from tenantplane.db.rows import encode_json


class Leased:
    """Columns of a row driven by a reconciler.

    ``reconcile_at``: when the row next needs attention (NULL: converged, nothing to do).
    Writers of desired state set it to now (and call ``wake_after_commit``); the reconciler
    sets it to the time of its next step, or NULL once converged.
    """

    lock_owner: Mapped[str | None] = mapped_column(String(64), default=None)
    lock_token: Mapped[str | None] = mapped_column(String(32), default=None)
    lock_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)

    @declared_attr
    def reconcile_at(cls) -> Mapped[datetime | None]:
        return mapped_column(UTCDateTime(), default=None, index=True)


def row_key(table: Table) -> ColumnElement[Any]:
    """The column that identifies a leased row: the table's one-column primary key."""
    (column,) = table.primary_key.columns
    return column


def ready_condition(table: Table, now: datetime | ColumnElement[datetime]) -> ColumnElement[bool]:
    """Rows whose reconciliation is due and that no live lease holds."""
    return and_(
        table.c.reconcile_at.is_not(None),
        table.c.reconcile_at <= now,
        or_(table.c.lock_expires_at.is_(None), table.c.lock_expires_at < now),
    )


def released() -> dict[str, Any]:
    """Values that end a lease."""
    return {"lock_owner": None, "lock_token": None, "lock_expires_at": None}


#: ``Lease.next_step`` when it is not known.
UNKNOWN: object = object()


@dataclass(frozen=True)
class Lease:
    """A lease on one row: what the worker needs to apply its results safely."""

    table: Table
    row_id: Any
    token: str
    owner: str
    #: When the lease was taken and first expires, by the database's clock (renewals by the
    #: heartbeat move the expiry in the row, not here).
    expires_at: datetime
    leased_at: datetime
    # Owner of the expired lease this one replaced (None: the row was free): a takeover.
    previous_owner: str | None = None
    # This process's monotonic clock when the lease was taken (see ``now``).
    taken_at: float = field(default_factory=time.monotonic, compare=False)
    # The row's next step as the write that ended this lease left it (see ``next_step``).
    _ended: list[object] = field(default_factory=lambda: [UNKNOWN], compare=False, repr=False)

    def ended(self, values: dict[str, Any] | None) -> None:
        """Note that a write matched the row and ended this lease with ``values`` (None:
        the row was deleted)."""
        if values is None:
            self._ended[0] = None
            return
        at = values.get("reconcile_at", UNKNOWN)
        self._ended[0] = at if at is None or isinstance(at, datetime) else UNKNOWN

    def next_step(self) -> datetime | object | None:
        """When the row is due again as this lease's end wrote it: a time, None (converged or
        deleted), or ``UNKNOWN`` (the lease has not been seen to end, or the write left the
        row's ``reconcile_at`` as it was, or set it to an expression)."""
        return self._ended[0]

    def guard(self, session: AsyncSession) -> LeaseGuard:
        return LeaseGuard(session, self)

    def now(self) -> datetime:
        """Now by the database's clock without asking it: its time when the lease was taken
        plus the time this process has measured since (a monotonic clock, so the process's
        own wall clock plays no part). For a step that applies its result in one statement,
        where asking the database would be a round trip of its own."""
        return self.leased_at + timedelta(seconds=time.monotonic() - self.taken_at)


class LeaseGuard:
    """Statements that take effect only while the lease is still held (0 rows = stale)."""

    def __init__(self, session: AsyncSession, lease: Lease) -> None:
        self.session = session
        self.lease = lease

    @property
    def _where(self) -> ColumnElement[bool]:
        table = self.lease.table
        return and_(row_key(table) == self.lease.row_id, table.c.lock_token == self.lease.token)

    async def update(
        self, *, release: bool = True, where: ColumnElement[bool] | None = None, **values: Any
    ) -> bool:
        """Write ``values`` (and end the lease unless ``release=False``) if still held, and
        if the row also matches ``where`` (a condition checked in the same statement)."""
        if release:
            values = {**values, **released()}
        condition = self._where if where is None else and_(self._where, where)
        statement = update(self.lease.table).where(condition).values(**values)
        result = await self.session.execute(statement)
        written = bool(result.rowcount)  # type: ignore[attr-defined]
        if written and release:
            self.lease.ended(values)
        return written

    async def retry_at(self, when: datetime) -> bool:
        """End the lease and ask to be called again at ``when``."""
        return await self.update(reconcile_at=when)

    async def retry_in(self, seconds: float) -> bool:
        return await self.retry_at(await self.now() + timedelta(seconds=seconds))

    async def now(self) -> datetime:
        """Now by the database's clock: the time to stamp on what is applied."""
        return await database_now(self.session)

    async def delete(self) -> bool:
        """Delete the row if still held (a resource whose teardown is complete)."""
        result = await self.session.execute(delete(self.lease.table).where(self._where))
        deleted = bool(result.rowcount)  # type: ignore[attr-defined]
        if deleted:
            self.lease.ended(None)
        return deleted


# The columns of a GuardedWrite: set, expected, incremented.
Shape = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]


@dataclass(frozen=True)
class GuardedWrite:
    """One row's part of ``update_each``: written only while ``lease`` is held and the row
    still has the values ``expect`` names (as ``LeaseGuard.update(where=…)`` with those
    equalities): ``values`` are set, ``increment`` columns increased by their amounts."""

    lease: Lease
    values: dict[str, Any]
    expect: dict[str, Any] = field(default_factory=dict)
    increment: dict[str, int] = field(default_factory=dict)

    def shape(self) -> Shape:
        return (tuple(self.values), tuple(self.expect), tuple(self.increment))


async def update_each(
    session: AsyncSession, writes: Sequence[GuardedWrite], *, release: bool = True
) -> set[Any]:
    """Write each row's own values, each row under its own lease and its own ``expect``
    exactly as ``LeaseGuard.update`` would (ending the lease unless ``release=False``);
    return the keys of the rows written. A row whose lease was lost or which no longer has
    the values expected is not written; the others are.

    One statement for all the rows of one shape (the same columns), whatever their number:
    ``UPDATE … FROM`` the rows as one JSON parameter (PostgreSQL's ``json_to_recordset``,
    SQLite's ``json_each``), ``RETURNING`` the keys written; its text depends on the shape
    only, so it is compiled (and on PostgreSQL prepared) once. On SQLite a statement costs
    no round trip but a hop to the driver's thread and back, while the one write lock is
    held: a batch of rows there took one statement, and the Python building it, per row.
    Values are what JSON carries (and times); another (bytes) is a TypeError."""
    if not writes:
        return set()
    dialect = session.get_bind().dialect
    shapes: dict[Shape, list[GuardedWrite]] = {}
    for write in writes:
        shapes.setdefault(write.shape(), []).append(write)
    written: set[Any] = set()
    for shape, group in shapes.items():
        table = group[0].lease.table
        if dialect.name == "postgresql":
            statement = _batched_update(table, *shape, release=release)
            rows = encode_json([_row(write) for write in group])
        else:
            statement = _sqlite_batched_update(table, *shape, release=release)
            rows = _stored_rows(table, group, dialect)
        result = await session.execute(statement, {"rows": rows})
        keys = set(result.scalars().all())
        if release:
            for write in group:
                if write.lease.row_id in keys:
                    write.lease.ended(write.values)
        written.update(keys)
    return written


def _row(write: GuardedWrite) -> dict[str, Any]:
    """One row of ``update_each``'s JSON parameter: key, token, values, expected values and
    increments, by position in the shape."""
    return {
        "k": write.lease.row_id,
        "t": write.lease.token,
        **{f"v{i}": value for i, value in enumerate(write.values.values())},
        **{f"e{i}": value for i, value in enumerate(write.expect.values())},
        **{f"i{i}": value for i, value in enumerate(write.increment.values())},
    }


def _stored_rows(table: Table, group: Sequence[GuardedWrite], dialect: Dialect) -> str:
    """SQLite: the rows of one shape as JSON, each value as its column stores it (through
    the column type's own bind processing: a time as SQLite's text, a JSON document as its
    text, a boolean as 0 or 1)."""
    first = group[0]
    columns = {f"v{i}": name for i, name in enumerate(first.values)}
    columns |= {f"e{i}": name for i, name in enumerate(first.expect)}
    processors = {
        name: table.c[column].type.dialect_impl(dialect).bind_processor(dialect)
        for name, column in columns.items()
    }
    rows = []
    for write in group:
        row = _row(write)
        for name, processor in processors.items():
            if processor is not None:
                row[name] = processor(row[name])
        rows.append(row)
    return encode_json(rows)


def _update_set(
    quote: Callable[[str], str],
    table: Table,
    values: tuple[str, ...],
    increment: tuple[str, ...],
    *,
    release: bool,
) -> str:
    """``UPDATE table AS t SET …`` of ``update_each``'s statements: each value from the
    row's ``v<i>``, each increment by its ``i<i>``, and the lease ended unless not
    ``release``."""
    assignments = [f"{quote(name)} = v.v{i}" for i, name in enumerate(values)]
    assignments += [f"{quote(name)} = t.{quote(name)} + v.i{i}" for i, name in enumerate(increment)]
    if release:
        assignments += [f"{quote(name)} = NULL" for name in released() if name not in values]
    return f"UPDATE {quote(table.name)} AS t SET {', '.join(assignments)}"  # noqa: S608


@functools.lru_cache(maxsize=64)
def _batched_update(
    table: Table,
    values: tuple[str, ...],
    expect: tuple[str, ...],
    increment: tuple[str, ...],
    *,
    release: bool,
) -> TextualSelect:
    """``UPDATE table AS t SET … FROM json_to_recordset(:rows) AS v(…) WHERE t.key = v.k AND
    t.lock_token = v.t AND t.<expected> IS NOT DISTINCT FROM v.e… RETURNING t.key``
    (PostgreSQL)."""
    dialect = postgresql.dialect()  # type: ignore[no-untyped-call]
    quote = dialect.identifier_preparer.quote
    key = row_key(table)

    def sql_type(name: str) -> str:
        return str(table.c[name].type.compile(dialect=dialect))

    record = [f"k {sql_type(key.name)}", "t text"]
    record += [f"v{i} {sql_type(name)}" for i, name in enumerate(values)]
    record += [f"e{i} {sql_type(name)}" for i, name in enumerate(expect)]
    record += [f"i{i} bigint" for i in range(len(increment))]
    conditions = [f"t.{quote(key.name)} = v.k", "t.lock_token = v.t"]
    # An expected NULL matches NULL, as ``LeaseGuard.update``'s ``column == None`` does.
    conditions += [f"t.{quote(name)} IS NOT DISTINCT FROM v.e{i}" for i, name in enumerate(expect)]
    # Identifiers from the table's definition, quoted; every value is in the one parameter.
    sql = " ".join(
        [
            _update_set(quote, table, values, increment, release=release),
            f"FROM json_to_recordset(CAST(:rows AS json)) AS v({', '.join(record)})",
            f"WHERE {' AND '.join(conditions)} RETURNING t.{quote(key.name)}",
        ]
    )
    return text(sql).columns(key)


@functools.lru_cache(maxsize=64)
def _sqlite_batched_update(
    table: Table,
    values: tuple[str, ...],
    expect: tuple[str, ...],
    increment: tuple[str, ...],
    *,
    release: bool,
) -> TextualSelect:
    """``_batched_update`` for SQLite: ``UPDATE table AS t SET … FROM (SELECT
    json_extract(value, '$.k') AS k, … FROM json_each(:rows)) AS v WHERE t.key = v.k AND
    t.lock_token = v.tk AND t.<expected> IS v.e… RETURNING key`` (``IS``: an expected
    NULL matches NULL, as ``LeaseGuard.update``'s ``column == None`` does)."""
    quote = sqlite.dialect().identifier_preparer.quote
    key = row_key(table)
    # The row's fields as ``_row`` names them; its token as ``tk`` (``t`` is the table).
    fields = [f"v{i}" for i in range(len(values))] + [f"e{i}" for i in range(len(expect))]
    fields += [f"i{i}" for i in range(len(increment))]
    extracted = ", ".join(
        ["json_extract(value, '$.k') AS k", "json_extract(value, '$.t') AS tk"]
        + [f"json_extract(value, '$.{field}') AS {field}" for field in fields]
    )
    conditions = [f"t.{quote(key.name)} = v.k", "t.lock_token = v.tk"]
    conditions += [f"t.{quote(name)} IS v.e{i}" for i, name in enumerate(expect)]
    # Identifiers from the table's definition, quoted; every value is in the one parameter.
    sql = " ".join(
        [
            _update_set(quote, table, values, increment, release=release),
            f"FROM (SELECT {extracted} FROM json_each(:rows)) AS v",  # noqa: S608
            # SQLite's RETURNING names the updated table's columns unqualified.
            f"WHERE {' AND '.join(conditions)} RETURNING {quote(key.name)}",
        ]
    )
    return text(sql).columns(key)


__all__ = [
    "GuardedWrite",
    "Lease",
    "LeaseGuard",
    "Leased",
    "ready_condition",
    "released",
    "update_each",
]
