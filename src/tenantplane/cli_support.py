"""Shared by the operator commands: run one unit of work in a committed transaction."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import typer
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.config import Settings
from tenantplane.db.engine import Database
from tenantplane.http.errors import ApiError

T = TypeVar("T")


def run_in_transaction(settings: Settings, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """Commit when ``work`` succeeds; a refused operation (ApiError) exits 1 with its message."""

    async def run() -> T:
        database = Database.connect(settings.database_url)
        try:
            async with database.transaction() as session:
                return await work(session)
        finally:
            await database.dispose()

    try:
        return asyncio.run(run())
    except ApiError as exc:
        typer.echo(f"error: {exc.error}", err=True)
        raise typer.Exit(1) from exc
