"""SQLite's writers of one process take turns in arrival order.

SQLite has one write lock per database. A writer that finds it taken waits in SQLite's busy
handler, which polls with growing sleeps (up to 100 ms): under load a newcomer often gets
the lock before writers that have waited far longer, and each of the pool's connections
sleeps its own back-off. Here a write transaction first takes this process's gate for the
file (an ``asyncio.Lock``: first come, first served, woken at once when the gate is free),
then ``BEGIN IMMEDIATE``; only one connection per process ever waits in SQLite's handler
(for other processes' writers). The gate is released when the connection goes back to the
pool, after its transaction has ended.
"""

from __future__ import annotations

import asyncio
import sqlite3
import weakref
from typing import Any

from sqlalchemy.exc import OperationalError
from sqlalchemy.util import await_only

#: How long a writer waits for the gate: SQLite's own busy timeout, after which it fails the
#: same way ("database is locked").
GATE_TIMEOUT_SECONDS = 30.0
_HELD = "tenantplane_write_gate"

# One gate per database file and event loop (a lock belongs to the loop it is used in).
_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


def _gate(database: str) -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    return _gates.setdefault(loop, {}).setdefault(database, asyncio.Lock())


def enter(connection_info: dict[str, Any], database: str) -> None:
    """Take the gate for ``database`` before a write transaction on this connection (inside
    SQLAlchemy's greenlet: the wait is an ``await``). A connection that holds it already
    (a second transaction before it went back to the pool) does not take it again."""
    if _HELD in connection_info:
        return
    gate = _gate(database)
    try:
        await_only(asyncio.wait_for(gate.acquire(), GATE_TIMEOUT_SECONDS))
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
