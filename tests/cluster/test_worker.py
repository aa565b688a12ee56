"""`tenantplane worker` drives clusters created through API replicas that run no reconcilers,
and stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import httpx
import pytest

from tests.cluster.polling import create_cluster, phase_is, poll
from tests.factories import Factory
from tests.http_client import bearer

TENANTPLANE = str(Path(sys.executable).parent / "tenantplane")


@pytest.mark.slow
async def test_a_separate_worker_process_provisions_clusters(
    paused_client: httpx.AsyncClient, factory: Factory, database_url: str
) -> None:
    tenant = await factory.tenant()
    await create_cluster(paused_client, tenant.path, tenant.admin_key, "dev")
    env = {
        **os.environ,
        "TENANTPLANE_DATABASE_URL": database_url,
        "TENANTPLANE_SIMULATOR_STEP_SECONDS": "0.05",
        # The API replica's hint cannot reach another process: the idle poll finds the work.
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
        path, headers = f"{tenant.path}/clusters/dev", bearer(tenant.admin_key)
        await poll(paused_client, path, headers, phase_is("Running"), "the worker to provision")
        await create_cluster(paused_client, tenant.path, tenant.admin_key, "second")
        await poll(
            paused_client,
            f"{tenant.path}/clusters/second",
            headers,
            phase_is("Running"),
            "the worker to pick up a later cluster",
        )
    finally:
        if worker.returncode is None:
            worker.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(worker.communicate(), timeout=60)
    assert worker.returncode == 0, stderr.decode()
    assert b"worker stopped" in stderr


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_postgres_notifies_a_worker_at_once(
    paused_client: httpx.AsyncClient, factory: Factory, database_url: str
) -> None:
    """The API replica's commit NOTIFYs the worker: no polling needed (PostgreSQL only)."""
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    await create_cluster(paused_client, tenant.path, tenant.admin_key, "first")
    env = {
        **os.environ,
        "TENANTPLANE_DATABASE_URL": database_url,
        "TENANTPLANE_SIMULATOR_STEP_SECONDS": "0.05",
        # Far beyond the test's deadline: only a notification can wake the worker in time.
        "TENANTPLANE_RECONCILE_IDLE_POLL_SECONDS": "3600",
        "TENANTPLANE_CLUSTER_RESYNC_SECONDS": "3600",
    }
    worker = await asyncio.create_subprocess_exec(
        TENANTPLANE,
        "worker",
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        # The first cluster is found by the worker's first look, which also shows it listens.
        await poll(
            paused_client,
            f"{tenant.path}/clusters/first",
            headers,
            phase_is("Running"),
            "the worker's first look",
        )
        await asyncio.sleep(0.5)  # let the worker settle into its long sleep
        await create_cluster(paused_client, tenant.path, tenant.admin_key, "second")
        await poll(
            paused_client,
            f"{tenant.path}/clusters/second",
            headers,
            phase_is("Running"),
            "the notified worker",
            deadline=30,
        )
    finally:
        if worker.returncode is None:
            worker.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(worker.communicate(), timeout=60)
    assert worker.returncode == 0, stderr.decode()
