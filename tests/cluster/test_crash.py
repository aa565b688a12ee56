"""A real server process is killed with SIGKILL while clusters provision and upgrade.

After a restart every cluster converges, none is lost, and the simulated host cluster
shows that nothing was done twice: each cluster was provisioned once, each requested
upgrade performed once, and the history holds each phase change once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from tenantplane.cluster.models import Cluster, ClusterHistory, ClusterPhase
from tenantplane.db.engine import Database
from tenantplane.providers.orchestrator.simulator_models import SimulatedCluster
from tenantplane.tenant.models import Plan
from tests.cluster.polling import DEADLINE_SECONDS
from tests.conftest import TEST_SECRET
from tests.factories import Factory, TenantFixture
from tests.http_client import bearer

TENANTPLANE = str(Path(sys.executable).parent / "tenantplane")
EARLY = 4  # created first, Running, then upgraded 1.32 → 1.33 when the kill comes
LATE = 6  # created just before the kill, still provisioning


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def server(
    database_url: str, tmp_path: Path, port: int, log_name: str
) -> Iterator[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "TENANTPLANE_DATABASE_URL": database_url,
        "TENANTPLANE_SECRET_KEY": TEST_SECRET,
        "TENANTPLANE_RATE_LIMIT": "100000/minute",
        # Slow enough that the kill lands mid-operation, fast enough for a test.
        "TENANTPLANE_SIMULATOR_STEP_SECONDS": "0.3",
        # A killed process's leases lapse quickly, so the restart takes over soon.
        "TENANTPLANE_RECONCILE_LEASE_SECONDS": "2",
        "TENANTPLANE_RECONCILE_IDLE_POLL_SECONDS": "0.2",
    }
    with (tmp_path / log_name).open("wb") as log:
        process = subprocess.Popen(
            [TENANTPLANE, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()


async def wait_until_serving(http: httpx.AsyncClient) -> None:
    loop = asyncio.get_running_loop()
    give_up = loop.time() + DEADLINE_SECONDS
    while True:
        try:
            if (await http.get("/healthz")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if loop.time() > give_up:
            pytest.fail("the server did not start")
        await asyncio.sleep(0.1)


async def clusters_of(http: httpx.AsyncClient, tenant: TenantFixture) -> list[dict[str, object]]:
    response = await http.get(f"/api/v1{tenant.path}/clusters", headers=bearer(tenant.admin_key))
    assert response.status_code == 200, response.text
    items: list[dict[str, object]] = response.json()["items"]
    return items


def phase(item: dict[str, object]) -> str:
    status = item["status"]
    assert isinstance(status, dict)
    return str(status["phase"])


def kubernetes_version(item: dict[str, object]) -> str:
    status = item["status"]
    assert isinstance(status, dict)
    return str(status["kubernetesVersion"])


async def poll_all(
    http: httpx.AsyncClient, tenants: list[TenantFixture], done: object, what: str
) -> list[dict[str, object]]:
    loop = asyncio.get_running_loop()
    give_up = loop.time() + 2 * DEADLINE_SECONDS
    while True:
        items = [item for tenant in tenants for item in await clusters_of(http, tenant)]
        if done(items):  # type: ignore[operator]
            return items
        if loop.time() > give_up:
            pytest.fail(f"gave up waiting for {what}: {[(i['name'], phase(i)) for i in items]}")
        await asyncio.sleep(0.05)


def is_subsequence(seen: list[str], full: list[str]) -> bool:
    remaining = iter(full)
    return all(any(entry == wanted for wanted in remaining) for entry in seen)


@pytest.mark.slow
async def test_sigkill_during_provisioning_and_upgrades_loses_nothing_and_repeats_nothing(
    database: Database, database_url: str, factory: Factory, tmp_path: Path
) -> None:
    tenants = [await factory.tenant(plan=Plan.business) for _ in range(2)]
    port = free_port()
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        with server(database_url, tmp_path, port, "first.log") as first:
            await wait_until_serving(http)
            for tenant in tenants:
                for index in range(EARLY):
                    response = await http.post(
                        f"/api/v1{tenant.path}/clusters",
                        json={
                            "name": f"early-{index}",
                            "version": "1.32",
                            "highAvailability": index % 2 == 0,
                        },
                        headers=bearer(tenant.admin_key),
                    )
                    assert response.status_code == 201, response.text
            await poll_all(
                http,
                tenants,
                lambda items: all(phase(item) == "Running" for item in items),
                "the early clusters to run",
            )
            for tenant in tenants:
                for index in range(EARLY):
                    response = await http.patch(
                        f"/api/v1{tenant.path}/clusters/early-{index}",
                        json={"version": "1.33"},
                        headers=bearer(tenant.admin_key),
                    )
                    assert response.status_code == 200, response.text
                for index in range(LATE):
                    response = await http.post(
                        f"/api/v1{tenant.path}/clusters",
                        json={"name": f"late-{index}", "highAvailability": index % 2 == 0},
                        headers=bearer(tenant.admin_key),
                    )
                    assert response.status_code == 201, response.text
            # Kill as soon as both kinds of work are visibly in flight.
            at_kill = await poll_all(
                http,
                tenants,
                lambda items: (
                    any(phase(item) == "Upgrading" for item in items)
                    and any(phase(item) in {"Pending", "Provisioning"} for item in items)
                ),
                "provisioning and upgrades in flight",
            )
            first.send_signal(signal.SIGKILL)
            first.wait()
        # The premise, read from the database the killed process left behind (the poll above
        # only saw work in flight before the kill): some clusters had not converged.
        async with database.sessionmaker() as session:
            unconverged = (
                await session.execute(
                    select(func.count())
                    .select_from(Cluster)
                    .where(Cluster.phase != ClusterPhase.running.value)
                )
            ).scalar_one()
        assert unconverged > 0, [(item["name"], phase(item)) for item in at_kill]

        with server(database_url, tmp_path, port, "second.log"):
            await wait_until_serving(http)
            final = await poll_all(
                http,
                tenants,
                lambda items: (
                    len(items) == len(tenants) * (EARLY + LATE)
                    and all(
                        phase(item) == "Running"
                        and kubernetes_version(item).startswith("v1.33.")
                        and (
                            not item["highAvailability"]
                            or item["status"]["haPhase"] == "ha-healthy"
                        )
                        for item in items
                    )
                ),
                "every cluster to converge after the restart",
            )
    assert len(final) == len(tenants) * (EARLY + LATE)

    async with database.sessionmaker() as session:
        clusters = (await session.execute(select(Cluster))).scalars().all()
        simulated = {
            row.uid: row for row in (await session.execute(select(SimulatedCluster))).scalars()
        }
        entries = (
            (await session.execute(select(ClusterHistory).order_by(ClusterHistory.id)))
            .scalars()
            .all()
        )
    assert len(clusters) == len(tenants) * (EARLY + LATE)
    assert len(simulated) == len(clusters)
    for cluster in clusters:
        deployment = simulated[cluster.uid]
        assert deployment.provision_count == 1, cluster.name
        expected_upgrades = 1 if cluster.name.startswith("early") else 0
        assert deployment.upgrade_count == expected_upgrades, cluster.name
        assert deployment.delete_count == 0
        mine = [entry for entry in entries if entry.cluster_uid == cluster.uid]
        assert [entry.event for entry in mine].count("created") == 1
        phases = [entry.phase for entry in mine if entry.event == "phase_changed"]
        assert all(a != b for a, b in pairwise(phases)), phases
        if cluster.name.startswith("early"):
            assert is_subsequence(phases, ["Provisioning", "Running", "Upgrading", "Running"])
            assert phases[:2] == ["Provisioning", "Running"]
            assert phases[-1] == "Running"
        else:
            assert phases in (["Provisioning", "Running"], ["Running"]), phases
        if cluster.high_availability:
            assert [entry.event for entry in mine].count("ha_configured") == 1
            assert cluster.ha_enabled_at is not None
        assert cluster.observed_generation == cluster.generation, cluster.name
