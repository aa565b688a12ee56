"""A worker whose clock runs ahead (libfaketime) neither takes live leases nor stamps the
future: lease expiry and the reconcilers' timestamps come from the database's clock.

PostgreSQL only: with SQLite every process reads the one machine's clock, which is the
database's clock (docs/reconcilers.md)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from tenantplane.db.engine import Database
from tests.conftest import TEST_SECRET
from tests.factories import Factory
from tests.faketime import skewed_env
from tests.http_client import api_on_a_postgres_of_its_own, bearer

TENANTPLANE = str(Path(sys.executable).parent / "tenantplane")
DEADLINE_SECONDS = 120.0
# Far more than the 45 s, so that the live leases below (expiring well within the
# skew) stay live however slowly this machine runs the test.
SKEW = "+600s"
LIVE_LEASE_SECONDS = 300
HELD = 3


@pytest.fixture
async def postgres(tmp_path: Path) -> AsyncIterator[tuple[str, Database, httpx.AsyncClient]]:
    async with api_on_a_postgres_of_its_own("tenantplane_skew", tmp_path) as own:
        yield own


async def _until(client: httpx.AsyncClient, path: str, headers: dict[str, str]) -> None:
    """Poll until the cluster is Running with HA configured (with a deadline)."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + DEADLINE_SECONDS
    while True:
        response = await client.get(path, headers=headers)
        status = response.json().get("status", {}) if response.status_code == 200 else {}
        if status.get("phase") == "Running" and status.get("haConfigured"):
            return
        assert loop.time() < give_up, f"the skewed worker never provisioned: {response.text}"
        await asyncio.sleep(0.05)


async def test_a_worker_with_a_clock_ahead_takes_no_live_lease_and_stamps_no_future(
    postgres: tuple[str, Database, httpx.AsyncClient],
) -> None:
    url, database, client = postgres
    factory = Factory(database, TEST_SECRET.encode())
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    created = await client.post(
        f"{tenant.path}/clusters", json={"name": "ha", "highAvailability": True}, headers=headers
    )
    assert created.status_code == 201, created.text
    # Rows another (healthy) worker holds right now: due, under a live lease.
    held = [await factory.cluster_row(tenant.id, f"held-{index}") for index in range(HELD)]
    async with database.transaction() as session:
        await session.execute(
            text(
                "UPDATE clusters SET lock_owner = 'healthy-worker', lock_token = 'live',"
                " lock_expires_at = now() + make_interval(secs => :seconds),"
                " reconcile_at = now() WHERE name LIKE 'held-%'"
            ),
            {"seconds": LIVE_LEASE_SECONDS},
        )

    env = {
        **os.environ,
        **skewed_env(SKEW),
        "TENANTPLANE_DATABASE_URL": url,
        "TENANTPLANE_SIMULATOR_STEP_SECONDS": "0.05",
        "TENANTPLANE_RECONCILE_IDLE_POLL_SECONDS": "0.1",
    }
    worker = await asyncio.create_subprocess_exec(
        TENANTPLANE,
        "worker",
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await _until(client, f"{tenant.path}/clusters/ha", headers)
        async with database.sessionmaker() as session:
            still_held = (
                await session.execute(
                    text(
                        "SELECT count(*) FROM clusters WHERE lock_token = 'live'"
                        " AND lock_owner = 'healthy-worker' AND lock_expires_at > now()"
                    )
                )
            ).scalar()
            future = (
                await session.execute(
                    text(
                        "SELECT (SELECT count(*) FROM clusters WHERE ha_enabled_at > now())"
                        " + (SELECT count(*) FROM cluster_history WHERE at > now())"
                    )
                )
            ).scalar()
            stamped = (
                await session.execute(
                    text("SELECT count(*) FROM cluster_history WHERE event = 'ha_configured'")
                )
            ).scalar()
    finally:
        if worker.returncode is None:
            worker.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(worker.communicate(), timeout=60)
    assert worker.returncode == 0, stderr.decode()
    assert still_held == len(held)
    assert stamped == 1
    assert future == 0
