"""libfaketime (Debian `faketime`): run a process whose clock is off by a given amount."""

from __future__ import annotations

import asyncio
import glob
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from tenantplane.db.engine import Database
from tenantplane.db.migrate import upgrade
from tests.backends import INSTALL_TOOLS

CANDIDATES = (
    "/usr/lib/*/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/faketime/libfaketime.so.1",
)
START_DEADLINE_SECONDS = 120.0


def library() -> str:
    for pattern in CANDIDATES:
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    pytest.fail(f"libfaketime is not installed; run: {INSTALL_TOOLS}", pytrace=False)


def skewed_env(offset: str) -> dict[str, str]:
    """Environment variables that shift a process's wall clock by ``offset`` ("+45s")."""
    return {
        "LD_PRELOAD": library(),
        "FAKETIME": offset,
        # Only the wall clock is off, as on a machine whose NTP failed; timers keep pace.
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "FAKETIME_NO_CACHE": "1",
    }


@dataclass(frozen=True)
class SkewedApi:
    """`tenantplane serve` under libfaketime on a migrated PostgreSQL database of its own."""

    offset: str
    base_url: str
    database: Database


@asynccontextmanager
async def skewed_api(offset: str, tmp_path: Path) -> AsyncIterator[SkewedApi]:
    """A server (with its reconcilers) whose wall clock is off by ``offset``, on a fresh
    PostgreSQL database (with SQLite the database's clock is the process's, faked too), and
    a ``Database`` of the test's own on it."""
    from tests.backends import postgres_database
    from tests.contract.server import TENANTPLANE, free_port, server_env

    with postgres_database("tenantplane_clock") as url:
        await asyncio.to_thread(upgrade, url)
        port = free_port()
        env = {
            **server_env(tmp_path, url),
            **skewed_env(offset),
            "TENANTPLANE_RECONCILE_IDLE_POLL_SECONDS": "0.1",
        }
        log = tmp_path / "server.log"
        database = Database.connect(url)
        with log.open("wb") as output:
            process = await asyncio.create_subprocess_exec(
                *(TENANTPLANE, "serve", "--host", "127.0.0.1", "--port", str(port)),
                env=env,
                stdout=output,
                stderr=asyncio.subprocess.STDOUT,
            )
            try:
                base_url = f"http://127.0.0.1:{port}"
                await _until_ready(base_url, process, log)
                yield SkewedApi(offset, base_url, database)
            finally:
                if process.returncode is None:
                    process.terminate()
                try:
                    await asyncio.wait_for(process.wait(), 20)
                except TimeoutError:
                    process.kill()
                    await process.wait()
                await database.dispose()


async def _until_ready(base_url: str, process: asyncio.subprocess.Process, log: Path) -> None:
    loop = asyncio.get_running_loop()
    give_up = loop.time() + START_DEADLINE_SECONDS
    async with httpx.AsyncClient(base_url=base_url, timeout=2) as client:
        while True:
            if process.returncode is not None:
                pytest.fail(f"the server exited: {_tail(log)}")
            try:
                if (await client.get("/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if loop.time() > give_up:
                pytest.fail(f"the server did not start within {START_DEADLINE_SECONDS:.0f}s")
            await asyncio.sleep(0.1)  # polling a condition with a deadline


async def database_clock_now(database: Database) -> datetime:
    """The database's clock as it reads now (clock_timestamp: not the transaction's start);
    SQLite's is the machine's."""
    if database.is_sqlite:
        return datetime.now(UTC)
    async with database.sessionmaker() as session:
        value: datetime = (await session.execute(text("SELECT clock_timestamp()"))).scalar_one()
    return value


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:]


# Far beyond the database clock's error (half a round trip on loopback), far below a skew.
SLACK = timedelta(seconds=2)


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def assert_database_time(value: datetime, before: datetime, after: datetime, what: str) -> None:
    """``value`` was stamped between ``before`` and ``after`` by the database's clock."""
    assert before - SLACK <= value <= after + SLACK, (
        f"{what} {value.isoformat()} is not the database's time "
        f"({before.isoformat()} .. {after.isoformat()})"
    )


async def database_rows(database: Database, sql: str, **parameters: Any) -> list[Any]:
    async with database.sessionmaker() as session:
        return list((await session.execute(text(sql), parameters)).all())
