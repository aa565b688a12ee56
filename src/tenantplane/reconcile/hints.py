"""Wake-up hints: a committed change wakes the reconciler at once instead of a poll.

Writers of desired state call ``wake_after_commit(session, name)``. The hint fires only when
the session's transaction commits (a rolled-back request wakes nobody), and reaches every
runner of that reconciler in this process. On PostgreSQL the same transaction also sends
``NOTIFY tenantplane_reconcile, '<name>'`` (delivered on commit only), which the runners of
other processes receive through ``reconcile.listener``. Without it (SQLite, or a lost
listening connection) they find the change at their next due time or idle poll
(``TENANTPLANE_RECONCILE_IDLE_POLL_SECONDS``).
"""

from __future__ import annotations

import asyncio
import functools
from collections import defaultdict
from typing import Any

from sqlalchemy import ColumnElement, event, func, text
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

_PENDING_KEY = "tenantplane.reconcile.wake"
# Names whose NOTIFY the current transaction has already sent (a statement of its own, or
# carried by one): not sent again before commit.
_NOTIFIED_KEY = "tenantplane.reconcile.notified"
NOTIFY_CHANNEL = "tenantplane_reconcile"


class Wake(asyncio.Event):
    """A runner's wake-up event; set by hints (``hint``, which also counts them) and by the
    runner itself (a finished row, stopping)."""

    def __init__(self) -> None:
        super().__init__()
        #: Hints since the runner last reset it (before a fetch).
        self.hints = 0
        #: Set once ``hints`` reaches ``enough_at`` (the rows a fetch can take).
        self.enough = asyncio.Event()
        self.enough_at = 1

    def hint(self) -> None:
        self.hints += 1
        if self.hints >= self.enough_at:
            self.enough.set()
        self.set()

    def reset_hints(self, enough_at: int) -> None:
        """Count hints from zero (before a fetch, which takes the rows of those before)."""
        self.hints = 0
        self.expect(enough_at)

    def expect(self, enough_at: int) -> None:
        """Set ``enough`` once ``enough_at`` hints have been counted (at once if they have)."""
        self.enough_at = max(enough_at, 1)
        if self.hints >= self.enough_at:
            self.enough.set()
        else:
            self.enough.clear()


class Wakeups:
    """Process-wide registry: reconciler name → the events of its running runners."""

    def __init__(self) -> None:
        self._events: dict[str, set[tuple[asyncio.AbstractEventLoop, Wake]]] = defaultdict(set)

    def subscribe(self, name: str) -> Wake:
        wake = Wake()
        self._events[name].add((asyncio.get_running_loop(), wake))
        return wake

    def unsubscribe(self, name: str, wake: asyncio.Event) -> None:
        self._events[name] = {entry for entry in self._events[name] if entry[1] is not wake}

    def wake(self, name: str) -> None:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        for loop, wake in list(self._events.get(name, ())):
            if loop is running:
                wake.hint()  # this loop's own thread: no self-pipe round through the loop
            elif not loop.is_closed():
                loop.call_soon_threadsafe(wake.hint)


wakeups = Wakeups()


def wake_after_commit(session: AsyncSession | Session, name: str) -> None:
    """Wake the reconciler ``name`` once this session's current transaction commits."""
    sync_session = session.sync_session if isinstance(session, AsyncSession) else session
    sync_session.info.setdefault(_PENDING_KEY, set()).add(name)


def notify_in_statement(session: AsyncSession, name: str) -> ColumnElement[Any] | None:
    """The NOTIFY of ``wake_after_commit(session, name)`` as an expression for a statement
    the caller runs anyway (``RETURNING``), sparing the round trip of its own statement
    before commit; None where there is nothing to send (SQLite).

    The statement must run in the outermost transaction: one inside a savepoint that is
    rolled back would take the notification with it.
    """
    wake_after_commit(session, name)
    sync_session = session.sync_session
    if sync_session.get_bind().dialect.name != "postgresql" or sync_session.in_nested_transaction():
        return None
    sync_session.info.setdefault(_NOTIFIED_KEY, set()).add(name)
    return notify_expression(name)


@functools.cache
def notify_expression(name: str) -> ColumnElement[Any]:
    """PostgreSQL's NOTIFY that wakes the reconciler ``name`` in other processes, as an
    expression of a statement; delivered when the statement's transaction commits."""
    # One expression per name, the same object every time: a statement that carries it can
    # be built once and kept (keyed by it), not rebuilt per request.
    return func.pg_notify(NOTIFY_CHANNEL, name)


def wake_now(name: str) -> None:
    """Wake the reconciler ``name`` at once (for code that has already committed)."""
    wakeups.wake(name)


# SQLAlchemy dispatches before_commit/after_commit for a released savepoint too (and
# after_rollback for a rolled-back one), with the savepoint still the session's nested
# transaction: only the outermost transaction's end counts, or a runner would wake before
# the row it should find is visible to its own connection.


@event.listens_for(Session, "before_commit")
def _notify_other_processes(session: Session) -> None:
    if session.in_nested_transaction():
        return
    names = session.info.get(_PENDING_KEY, set()) - session.info.get(_NOTIFIED_KEY, set())
    if not names or session.get_bind().dialect.name != "postgresql":
        return
    for name in sorted(names):
        session.execute(
            text("SELECT pg_notify(:channel, :name)"), {"channel": NOTIFY_CHANNEL, "name": name}
        )


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    if session.in_nested_transaction():
        return  # a savepoint was released; the outer transaction goes on
    session.info.pop(_NOTIFIED_KEY, None)
    for name in session.info.pop(_PENDING_KEY, set()):
        wakeups.wake(name)


@event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    # A rolled-back savepoint keeps every hint of its transaction: telling the hints made
    # inside it from those made before would cost bookkeeping, and a spare wake-up only makes
    # a runner look once for nothing, where a lost one delays a change until the idle poll.
    # A NOTIFY sent inside the rolled-back savepoint is dropped with it: sent again at commit.
    session.info.pop(_NOTIFIED_KEY, None)
    if session.in_nested_transaction():
        return
    session.info.pop(_PENDING_KEY, None)
