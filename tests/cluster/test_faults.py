"""Operator fault injection (`tenantplane simulator …`) and HA degradation and recovery.

The commands run through the real command-line parser against the test's database, as an
operator would run them beside a serving instance: in a thread of this process (importing
the CLI in a fresh process costs seconds), and once as a real process.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from tenantplane import cli
from tenantplane.db.engine import Database
from tenantplane.tenant.models import Plan
from tests.cluster.polling import create_cluster, poll, status_matches
from tests.conftest import make_settings
from tests.factories import Factory
from tests.http_client import api_client, bearer, running_app

TENANTPLANE = str(Path(sys.executable).parent / "tenantplane")


@pytest.fixture
async def fast_client(
    database: Database, database_url: str, tmp_path: Path
) -> AsyncIterator[httpx.AsyncClient]:
    # Changes made by other processes are noticed within the idle poll.
    settings = make_settings(database_url, tmp_path, reconcile_idle_poll_seconds=0.1)
    async with running_app(settings) as app, api_client(app) as client:
        yield client


def cli_env(database_url: str) -> dict[str, str]:
    return {
        "TENANTPLANE_DATABASE_URL": database_url,
        "TENANTPLANE_SIMULATOR_STEP_SECONDS": "0.05",
        "TENANTPLANE_LOG_JSON": "true",
    }


async def simulator(database_url: str, *args: str) -> tuple[int, str]:
    runner = CliRunner()
    result = await asyncio.to_thread(
        runner.invoke, cli.app, ["simulator", *args], env=cli_env(database_url)
    )
    return result.exit_code, result.output


async def simulator_process(database_url: str, *args: str) -> tuple[int, str]:
    env = {**os.environ, **cli_env(database_url)}
    process = await asyncio.create_subprocess_exec(
        TENANTPLANE,
        "simulator",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    assert process.returncode is not None
    return process.returncode, output.decode()


async def test_faults_degrade_and_recover_an_ha_cluster(
    fast_client: httpx.AsyncClient, factory: Factory, database_url: str
) -> None:
    client = fast_client
    tenant = await factory.tenant(plan=Plan.pro)
    await create_cluster(client, tenant.path, tenant.admin_key, "ha", highAvailability=True)
    path, headers = f"{tenant.path}/clusters/ha", bearer(tenant.admin_key)
    healthy = await poll(client, path, headers, status_matches(haPhase="ha-healthy"), "healthy")
    anchor = healthy.json()["status"]["haEnabledAt"]

    code, output = await simulator(database_url, "fail-replica", tenant.name, "ha")
    assert code == 0, output
    degraded = await poll(
        client,
        path,
        headers,
        status_matches(haPhase="ha-degraded", haReplicasReady=2, haEtcdReplicasReady=3),
        "ha-degraded",
    )
    conditions = {c["type"]: c for c in degraded.json()["status"]["conditions"]}
    assert conditions["HighAvailability"]["status"] == "False"
    assert conditions["HighAvailability"]["reason"] == "HADegraded"
    assert conditions["Ready"]["status"] == "True"  # the API still serves

    code, output = await simulator(
        database_url, "fail-replica", tenant.name, "ha", "--component", "etcd", "--count", "2"
    )
    assert code == 0, output
    unavailable = await poll(
        client,
        path,
        headers,
        status_matches(haPhase="ha-unavailable", haEtcdReplicasReady=1),
        "ha-unavailable",
    )
    conditions = {c["type"]: c for c in unavailable.json()["status"]["conditions"]}
    assert conditions["Ready"]["status"] == "False"
    assert conditions["ControlPlaneAvailable"]["status"] == "False"

    code, output = await simulator(database_url, "recover", tenant.name, "ha")
    assert code == 0, output
    recovered = await poll(
        client,
        path,
        headers,
        status_matches(haPhase="ha-healthy", haReplicasReady=3, haEtcdReplicasReady=3),
        "recovery",
    )
    status = recovered.json()["status"]
    assert status["haConfigured"] is True
    assert status["haEnabledAt"] == anchor  # stamped once, never changed

    code, output = await simulator(database_url, "show", tenant.name, "ha")
    assert code == 0, output
    state: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    assert state["provisionCount"] == 1
    assert state["controlPlaneFailed"] == 0
    assert state["lastStepAt"].endswith("Z")


async def test_fault_commands_refuse_unknown_clusters(
    fast_client: httpx.AsyncClient, factory: Factory, database_url: str
) -> None:
    tenant = await factory.tenant()
    code, _ = await simulator_process(database_url, "fail-replica", tenant.name, "nope")
    assert code == 1  # refused, like any unknown name
    code, _ = await simulator(
        database_url, "fail-replica", tenant.name, "nope", "--component", "disk"
    )
    assert code == 2  # usage
