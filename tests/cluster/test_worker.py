"""`tenantplane worker` drives clusters created through API replicas that run no reconcilers,
serves its metrics with --metrics-port, and stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cluster.polling import DEADLINE_SECONDS, create_cluster, phase_is, poll
from tests.contract.server import free_port
from tests.factories import Factory
from tests.http_client import bearer

TENANTPLANE = str(Path(sys.executable).parent / "tenantplane")


class Worker:
    """A `tenantplane worker` process whose JSON log lines are read as they come."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.records: list[dict[str, Any]] = []
        self.text: list[str] = []
        self._changed = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, env: dict[str, str], *args: str) -> Worker:
        process = await asyncio.create_subprocess_exec(
            TENANTPLANE,
            "worker",
            *args,
            env={**os.environ, **env},
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(process)

    async def _read(self) -> None:
        assert self.process.stderr is not None
        async for line in self.process.stderr:
            text = line.decode(errors="replace")
            self.text.append(text)
            if text.startswith("{"):
                self.records.append(json.loads(text))
            self._changed.set()
        self._changed.set()

    async def logged(self, matches: Callable[[dict[str, Any]], bool], what: str) -> None:
        """Until a log record matches (a condition with a deadline)."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + DEADLINE_SECONDS
        while not any(matches(record) for record in self.records):
            if self._reader.done():
                pytest.fail(f"the worker exited before logging {what}: {''.join(self.text)}")
            self._changed.clear()
            remaining = give_up - loop.time()
            if remaining <= 0:
                pytest.fail(f"the worker never logged {what}: {''.join(self.text[-50:])}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    async def stop(self) -> tuple[int, str]:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(self.process.wait(), timeout=60)
        await self._reader
        return code, "".join(self.text)


def metric(text: str, series: str) -> float:
    [line] = [line for line in text.splitlines() if line.startswith(series + " ")]
    return float(line.rsplit(" ", 1)[1])


@pytest.mark.slow
async def test_a_separate_worker_process_provisions_clusters_and_serves_metrics(
    paused_client: httpx.AsyncClient, factory: Factory, database_url: str
) -> None:
    tenant = await factory.tenant()
    await create_cluster(paused_client, tenant.path, tenant.admin_key, "dev")
    env = {
        "TENANTPLANE_DATABASE_URL": database_url,
        "TENANTPLANE_SIMULATOR_STEP_SECONDS": "0.05",
        # The API replica's hint cannot reach another process: the idle poll finds the work.
        "TENANTPLANE_RECONCILE_IDLE_POLL_SECONDS": "0.1",
        "TENANTPLANE_LOG_JSON": "true",
    }
    port = free_port()
    worker = await Worker.start(env, "--metrics-port", str(port))
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
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as scraper:
            metrics = (await scraper.get("/metrics")).text
            assert (await scraper.get("/nothing-here")).status_code == 404
    finally:
        code, stderr = await worker.stop()
    assert code == 0, stderr
    assert "worker stopped" in stderr
    [started] = [record for record in worker.records if record["event"] == "worker started"]
    assert started["metrics"] == f"http://127.0.0.1:{port}/metrics"
    clusters = '{reconciler="clusters"}'
    # Two clusters, each provisioned over several simulator steps.
    assert metric(metrics, f"tenantplane_reconcile_steps_total{clusters}") >= 4
    assert metric(metrics, f"tenantplane_reconcile_failures_total{clusters}") == 0
    assert metric(metrics, f"tenantplane_reconcile_queue_depth{clusters}") == 0
    assert metric(metrics, "process_resident_memory_bytes") > 0
    assert "python_info{" in metrics


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
        "TENANTPLANE_DATABASE_URL": database_url,
        "TENANTPLANE_SIMULATOR_STEP_SECONDS": "0.05",
        # Far beyond the test's deadline: only a notification can wake the worker in time.
        "TENANTPLANE_RECONCILE_IDLE_POLL_SECONDS": "3600",
        "TENANTPLANE_CLUSTER_RESYNC_SECONDS": "3600",
        # Runners log each wait at DEBUG: the test sees the worker settle into its long one.
        "TENANTPLANE_LOG_LEVEL": "DEBUG",
        "TENANTPLANE_LOG_JSON": "true",
    }
    worker = await Worker.start(env)
    try:
        # The first cluster is found by the worker's first look, which also shows it listens.
        await poll(
            paused_client,
            f"{tenant.path}/clusters/first",
            headers,
            phase_is("Running"),
            "the worker's first look",
        )
        await worker.logged(
            lambda record: (
                record["event"] == "waiting for work"
                and record.get("reconciler") == "clusters"
                and record["seconds"] > 600
            ),
            "the cluster reconciler's long wait",
        )
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
        code, stderr = await worker.stop()
    assert code == 0, stderr


async def test_a_metrics_port_in_use_is_one_line_naming_the_option(database_url: str) -> None:
    """Before: uvicorn's log line, then a traceback ending in SystemExit: 3."""
    env = {"TENANTPLANE_DATABASE_URL": database_url, "TENANTPLANE_LOG_JSON": "true"}
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        worker = await Worker.start(env, "--metrics-port", str(port))
        code = await asyncio.wait_for(worker.process.wait(), timeout=60)
        await worker._reader
    assert code == 3, "".join(worker.text)
    assert worker.text == [
        f"error: 127.0.0.1:{port} is already in use; choose another port with --metrics-port N\n"
    ]


async def test_sigint_stops_the_worker_with_exit_status_0(database_url: str) -> None:
    env = {"TENANTPLANE_DATABASE_URL": database_url, "TENANTPLANE_LOG_JSON": "true"}
    worker = await Worker.start(env)
    await worker.logged(lambda record: record["event"] == "worker started", "its start")
    worker.process.send_signal(signal.SIGINT)
    code = await asyncio.wait_for(worker.process.wait(), timeout=60)
    await worker._reader
    assert code == 0, "".join(worker.text)
    assert worker.records[-1]["event"] == "worker stopped"
