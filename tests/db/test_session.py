"""The request's session (db/session.py): what a route did is committed when it succeeds
(objects added and not flushed included), rolled back when it fails; a route that never used
its session sends nothing and holds no connection."""

from __future__ import annotations

import uuid

import httpx
from fastapi import FastAPI, HTTPException
from sqlalchemy import func, select

from tenantplane.db.engine import Database
from tenantplane.db.session import SessionDep
from tenantplane.providers.sync.simulator_models import SimulatedSecretCopy
from tests.statements import statements_sent


def _copy(name: str) -> SimulatedSecretCopy:
    return SimulatedSecretCopy(
        cluster_uid=uuid.uuid4().hex,
        namespace="apps",
        name=name,
        owner_uid=uuid.uuid4().hex,
        vault_mount="kv",
        secret_path="apps/x",
    )


def _app(database: Database) -> FastAPI:
    app = FastAPI()
    app.state.database = database

    @app.post("/added")
    async def added(session: SessionDep) -> None:
        session.add(_copy("added"))  # not flushed: the commit must flush it

    @app.post("/flushed-then-failed")
    async def flushed_then_failed(session: SessionDep) -> None:
        session.add(_copy("failed"))
        await session.flush()
        raise HTTPException(409)

    @app.post("/unused")
    async def unused(session: SessionDep) -> None:
        return None

    return app


async def _names(database: Database) -> list[str]:
    async with database.sessionmaker() as session:
        statement = select(SimulatedSecretCopy.name).order_by(SimulatedSecretCopy.name)
        return list((await session.execute(statement)).scalars())


async def test_a_routes_session_commits_what_it_added_and_rolls_back_a_failure(
    database: Database,
) -> None:
    transport = httpx.ASGITransport(app=_app(database))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        assert (await client.post("/added")).status_code == 200
        assert (await client.post("/flushed-then-failed")).status_code == 409
        with statements_sent(database) as sent:
            assert (await client.post("/unused")).status_code == 200
    assert sent == []
    assert await _names(database) == ["added"]
    async with database.sessionmaker() as session:
        count = select(func.count()).select_from(SimulatedSecretCopy)
        assert (await session.execute(count)).scalar_one() == 1
    checked_out = database.engine.pool.checkedout()  # type: ignore[attr-defined]
    assert checked_out == 0
