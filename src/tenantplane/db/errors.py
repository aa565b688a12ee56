"""What a database failure means for the caller: busy (retry soon) or unavailable.

Both are transient and answered 503 with Retry-After by the API (docs/errors.md): *busy*
when a statement gave up waiting (a lock held by another session past ``lock_timeout``, a
statement past ``statement_timeout``, a deadlock or serialisation failure, SQLite's
"database is locked"); *unavailable* when no connection could be had (the pool's timeout
passed, the server refused or dropped the connection, ``too many clients``).
"""

from __future__ import annotations

import enum

from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout


class DatabaseTrouble(enum.Enum):
    busy = "busy"
    unavailable = "unavailable"


# SQLSTATEs: lock_not_available, query_canceled (statement_timeout), deadlock_detected,
# serialization_failure.
_BUSY_STATES = {"55P03", "57014", "40P01", "40001"}
# too_many_connections, admin_shutdown, crash_shutdown, cannot_connect_now, and the whole
# connection_exception class (08…), idle_in_transaction_session_timeout (our own session
# was ended by the server).
_UNAVAILABLE_STATES = {"53300", "57P01", "57P02", "57P03", "25P03"}


def classify(exc: BaseException) -> DatabaseTrouble | None:
    """The kind of transient trouble ``exc`` reports, or None for any other error."""
    if isinstance(exc, PoolTimeout):
        return DatabaseTrouble.unavailable
    if not isinstance(exc, DBAPIError):
        return None
    state = getattr(exc.orig, "sqlstate", None)
    if state in _BUSY_STATES:
        return DatabaseTrouble.busy
    if exc.connection_invalidated or state in _UNAVAILABLE_STATES:
        return DatabaseTrouble.unavailable
    if state is not None and state.startswith("08"):
        return DatabaseTrouble.unavailable
    message = str(exc.orig).lower()
    if "database is locked" in message:
        return DatabaseTrouble.busy
    # By class, not by name: the drivers raise subclasses (psycopg's ConnectionTimeout when
    # a server accepts the connection but never answers).
    if (
        state is None
        and isinstance(exc, OperationalError)
        and ("connect" in message or "server closed" in message or "unable to open" in message)
    ):
        return DatabaseTrouble.unavailable
    return None
