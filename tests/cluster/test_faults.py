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
from tests.cluster.polling import create_cluster, poll, status_matches, wait_running
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
    """Exit code and stdout (logs go to stderr)."""
    runner = CliRunner()
    result = await asyncio.to_thread(
        runner.invoke, cli.app, ["simulator", *args], env=cli_env(database_url)
    )
    return result.exit_code, result.stdout


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

    code, output = await simulator(database_url, "fail-replica", tenant.name, "ha", "--json")
    assert code == 0, output
    failed = json.loads(output)
    assert failed["controlPlane"] == {"desired": 3, "ready": 2}
    assert failed["etcd"] == {"desired": 3, "ready": 3}
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
    # One line, the replicas said once (they were repeated from the observation's message).
    assert output == (
        f"cluster ha of tenant {tenant.name}: stage ready, "
        "control plane 2/3 ready, etcd 1/3 ready\n"
    ), output
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
    assert output.startswith(f"cluster ha of tenant {tenant.name}: stage "), output
    assert output.count("control plane") == output.count("etcd") == 1, output
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

    code, output = await simulator(database_url, "show", tenant.name, "ha", "--json")
    assert code == 0, output
    state: dict[str, Any] = json.loads(output)
    assert all("_" not in key for key in state), state  # camelCase, as the API
    assert state["provisionCount"] == 1
    assert state["controlPlaneFailed"] == 0
    assert state["lastStepAt"].endswith("Z")


async def test_fault_commands_refuse_unknown_clusters_and_components(
    fast_client: httpx.AsyncClient, factory: Factory, database_url: str
) -> None:
    tenant = await factory.tenant()
    await create_cluster(fast_client, tenant.path, tenant.admin_key, "dev")
    await wait_running(fast_client, tenant.path, tenant.admin_key, "dev")

    code, _ = await simulator_process(database_url, "fail-replica", tenant.name, "nope")
    assert code == 1  # refused, like any unknown name
    code, output = await simulator(database_url, "recover", tenant.name, "nope", "--json")
    assert code == 1
    assert json.loads(output) == {
        "error": {"code": "NOT_FOUND", "message": f"no cluster nope in tenant {tenant.name}"}
    }
    # An unknown component of a cluster that exists: a usage error, and nothing fails.
    code, output = await simulator(
        database_url, "fail-replica", tenant.name, "dev", "--component", "disk", "--json"
    )
    assert code == 2, output
    assert json.loads(output)["error"]["code"] == "USAGE"
    code, output = await simulator(database_url, "show", tenant.name, "dev", "--json")
    assert code == 0, output
    state = json.loads(output)
    assert (state["controlPlaneFailed"], state["etcdFailed"]) == (0, 0)
    assert (state["controlPlaneUp"], state["etcdUp"]) == (1, 1)


async def test_fault_commands_refuse_a_cluster_not_yet_provisioned(
    paused_client: httpx.AsyncClient, factory: Factory, database_url: str
) -> None:
    """The API knows the cluster, the host cluster does not (no reconciler ran yet)."""
    tenant = await factory.tenant()
    await create_cluster(paused_client, tenant.path, tenant.admin_key, "dev")
    for command in (["fail-replica"], ["recover"], ["show"]):
        code, output = await simulator(database_url, *command, tenant.name, "dev", "--json")
        assert code == 1, output
        assert json.loads(output)["error"]["code"] == "NOT_PROVISIONED", command
