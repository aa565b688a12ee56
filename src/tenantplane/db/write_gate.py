"""SQLite's writers of one process take turns at the process's gate.

SQLite has one write lock per database. A writer that finds it taken waits in SQLite's busy
handler, which polls with growing sleeps (up to 100 ms): under load a newcomer often gets
the lock before writers that have waited far longer, and each of the pool's connections
sleeps its own back-off. Here a write transaction first takes this process's gate for the
file (woken at once when the gate is free), then ``BEGIN IMMEDIATE``; only one connection
per process ever waits in SQLite's handler (for other processes' writers). The gate is
released when the connection goes back to the pool, after its transaction has ended.

Writers queue in arrival order, in two lines: transactions that go first (``first``: the
looks of a reconciler whose outside world lives in this database, the cluster simulator)
and everyone else's. A burst of requests keeps every connection of the pool queued at the
gate: behind them each simulated step would be recorded a dozen requests' turns late, and
the steps it simulates would stretch with the load. So a free gate goes to the first line,
but never twice in a row while another writer waits: the lines alternate, and neither
waits more than one turn of the other per turn of its own.
"""

from __future__ import annotations

import asyncio
import sqlite3
import weakref
from collections import deque
from typing import Any

from sqlalchemy.exc import OperationalError
from sqlalchemy.util import await_only

#: How long a writer waits for the gate: SQLite's own busy timeout, after which it fails the
#: same way ("database is locked").
GATE_TIMEOUT_SECONDS = 30.0
_HELD = "tenantplane_write_gate"


class WriteGate:
    """A lock with two first-come, first-served lines that take turns (see the module)."""

    def __init__(self) -> None:
        self._held = False
        self._first: deque[asyncio.Future[None]] = deque()
        self._rest: deque[asyncio.Future[None]] = deque()
        # Whether the last turn handed over went to the ``first`` line.
        self._last_was_first = False

    async def acquire(self, *, first: bool = False) -> None:
        if not self._held and not self._first and not self._rest:
            self._held = True
            self._last_was_first = first
            return
        line = self._first if first else self._rest
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        line.append(turn)
        try:
            await turn
        except BaseException:
            if turn.done() and not turn.cancelled():
                self.release()  # handed over just as the waiter gave up: pass it on
            elif turn in line:
                line.remove(turn)
            raise

    def release(self) -> None:
        """Hand the gate to the next waiter (see the module for whose turn it is) or free it."""
        rest_waits = any(not turn.done() for turn in self._rest)
        lines = (self._rest, self._first) if self._last_was_first and rest_waits else None
        for line in lines or (self._first, self._rest):
            while line:
                turn = line.popleft()
                if not turn.done():
                    self._last_was_first = line is self._first
                    turn.set_result(None)
                    return
        self._held = False


# One gate per database file and event loop (a future belongs to the loop it is used in).
_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, WriteGate]] = (
    weakref.WeakKeyDictionary()
)


def _gate(database: str) -> WriteGate:
    loop = asyncio.get_running_loop()
    return _gates.setdefault(loop, {}).setdefault(database, WriteGate())


async def take_turn(gate: WriteGate, *, first: bool = False) -> None:
    """``gate.acquire``, within ``GATE_TIMEOUT_SECONDS`` (TimeoutError past it).

    ``asyncio.timeout``, not ``asyncio.wait_for``: on Python 3.11 the latter runs the wait
    as a task of its own and, when its caller is cancelled just as that task is handed the
    gate, returns as if nothing happened. The cancelled caller then went on: a lease's
    heartbeat, cancelled at the end of its batch, kept renewing for ever and its batch never
    got past waiting for it (tests/reconcile/test_batches.py failed one run in four)."""
    async with asyncio.timeout(GATE_TIMEOUT_SECONDS):
        await gate.acquire(first=first)


def enter(connection_info: dict[str, Any], database: str, *, first: bool = False) -> None:
    """Take the gate for ``database`` before a write transaction on this connection (inside
    SQLAlchemy's greenlet: the wait is an ``await``), in the first line when ``first``. A
    connection that holds it already (a second transaction before it went back to the
    pool) does not take it again."""
    if _HELD in connection_info:
        return
    gate = _gate(database)
    try:
        await_only(take_turn(gate, first=first))
    except TimeoutError as exc:
        # As SQLite itself fails a writer past its busy timeout: a busy database (503).
        locked = sqlite3.OperationalError("database is locked (no write turn in this process)")
        raise OperationalError("BEGIN IMMEDIATE", None, locked) from exc
    connection_info[_HELD] = gate


def leave(connection_info: dict[str, Any]) -> None:
    """Release the gate this connection holds, if any (back in the pool: no transaction)."""
    gate = connection_info.pop(_HELD, None)
    if gate is not None:
        gate.release()
