"""The request-scoped session: committed when the route succeeds, rolled back otherwise."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any

from fastapi import Depends, Request, Response
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.db.engine import Database
from tenantplane.db.reads import Reads


def get_database(request: Request) -> Database:
    database: Database = request.app.state.database
    return database


# Requests that change nothing (HTTP's safe methods) read in a session without the write lock.
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


# Work a request adds to its own transaction once the route has answered, before the commit
# (an audit event records the answer: its status and headers), and work done when the route
# fails (an audit event records a refusal).
BeforeCommit = Callable[[AsyncSession, Response], Awaitable[None]]
OnFailure = Callable[[AsyncSession, Exception], Awaitable[None]]
_BEFORE_COMMIT = "before_commit"
_ON_FAILURE = "on_failure"


def _hooks(request: Request, name: str) -> list[Any]:
    hooks: list[Any] | None = getattr(request.state, name, None)
    if hooks is None:
        hooks = []
        setattr(request.state, name, hooks)
    return hooks


def before_commit(request: Request, hook: BeforeCommit) -> None:
    """Run ``hook`` in the request's session after the route returns, before the commit;
    not when the route fails (its transaction is rolled back)."""
    _hooks(request, _BEFORE_COMMIT).append(hook)


def on_failure(request: Request, hook: OnFailure) -> None:
    """Run ``hook`` with the request's session and the exception when the route fails; the
    session's transaction is still open (a hook that writes rolls it back first)."""
    _hooks(request, _ON_FAILURE).append(hook)


async def get_session(request: Request, response: Response) -> AsyncIterator[AsyncSession]:
    """``response``: the one the route sets its status and headers on (FastAPI passes the
    same object to every dependency and to the route)."""
    database = get_database(request)
    sessions = database.reader if request.method in READ_METHODS else database.sessionmaker
    session = sessions()
    try:
        try:
            yield session
        except Exception as exc:
            for failed in getattr(request.state, _ON_FAILURE, ()):
                await failed(session, exc)
            raise
        for hook in getattr(request.state, _BEFORE_COMMIT, ()):
            await hook(session, response)
        if session.in_transaction() or _pending(session):
            await session.commit()
    finally:
        # Closing rolls back what was not committed (a failure) and hands the connection
        # back. A session that never began a transaction, or whose commit ended it, holds
        # no connection: a route that left it unused skips the commit and the close, 60 µs
        # of the event loop and a task each.
        if session.in_transaction():
            # Shielded, as AsyncSession's own exit closes: a cancelled request still hands
            # its connection back.
            await asyncio.shield(session.close())


def _pending(session: AsyncSession) -> bool:
    """Objects added, changed or deleted and not flushed: the commit writes them."""
    return bool(session.new or session.dirty or session.deleted)


# scope="function": the commit happens before the response is sent, so a failed commit is
# answered as an error and never acknowledged as a success.
SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]


async def _database(request: Request) -> Database:
    return get_database(request)


DatabaseDep = Annotated[Database, Depends(_database)]


# Dependencies are coroutines: FastAPI runs a plain function in its thread pool, a thread
# hop per request for a lookup of microseconds.
async def get_reads(request: Request) -> Reads:
    return get_database(request).reads


# Plain reads for GETs (db/reads.py): no session, no transaction to commit.
ReadsDep = Annotated[Reads, Depends(get_reads)]
