"""Waiting for the alerting reconciler to apply a stored configuration to the backend
(after the write's commit), with a deadline: a hang becomes a clear failure."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from sqlalchemy import select

from tenantplane.alerting.models import AlertingConfig
from tenantplane.db.engine import Database
from tenantplane.tenant.models import Tenant

DEADLINE_SECONDS = 60.0


async def _state(database: Database, tenant: str) -> tuple[str, str, bool] | None:
    statement = (
        select(AlertingConfig.apply_status, AlertingConfig.apply_error, AlertingConfig.reconcile_at)
        .join(Tenant, Tenant.id == AlertingConfig.tenant_id)
        .where(Tenant.name == tenant)
    )
    async with database.sessionmaker() as session:
        row = (await session.execute(statement)).one_or_none()
    return None if row is None else (row[0], row[1], row[2] is None)


async def settled(
    database: Database,
    tenant: str,
    done: Callable[[str, bool], bool] = lambda status, idle: idle and status != "pending",
) -> tuple[str, str]:
    """The tenant's (apply_status, apply_error) once ``done(status, nothing_due)``; by
    default once the last write was applied or refused and nothing more is due."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + DEADLINE_SECONDS
    while True:
        state = await _state(database, tenant)
        if state is not None and done(state[0], state[2]):
            return state[0], state[1]
        if loop.time() > give_up:
            pytest.fail(f"the alerting configuration of {tenant} never settled: {state}")
        await asyncio.sleep(0.02)


async def applied(database: Database, tenant: str) -> None:
    status, error = await settled(database, tenant)
    assert status == "applied", error


def unavailable(status: str, idle: bool) -> bool:
    return status == "unavailable"
