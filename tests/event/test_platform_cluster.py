"""Platform events of clusters (cluster/events.py): phase changes, HA phase changes and
upgrades, recorded by the cluster reconciler in the transaction that writes the status, and
the request path's Terminating after the DELETE's audit event. Read back through GET
/events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update

from tenantplane.catalogue.plans import load_plans
from tenantplane.catalogue.versions import load_versions
from tenantplane.cluster.events import status_events
from tenantplane.cluster.models import Cluster
from tenantplane.cluster.reconciler import ClusterReconciler
from tenantplane.db.engine import Database
from tenantplane.providers.orchestrator import ClusterSpec, Observation, Orchestrator, Stage
from tenantplane.providers.orchestrator.simulator import SimulatorOrchestrator
from tenantplane.reconcile.fence import WriteFence
from tenantplane.reconcile.runner import ReconcilerRunner
from tenantplane.tenant.models import Plan
from tests.cluster.polling import create_cluster, wait_running
from tests.conftest import make_settings
from tests.event.stream import events, key_id
from tests.factories import Factory, TenantFixture
from tests.http_client import api_client, bearer, running_app

SYSTEM = {"kind": "system"}
# The catalogue's patches (catalogue/versions.yaml): what the simulator runs.
V1_32 = "v1.32.9"
V1_33 = "v1.33.5"


def platform(action: str, name: str, **data: Any) -> dict[str, Any]:
    """What a platform event of cluster ``name`` says (the fields the tests compare)."""
    return {
        "type": "platform",
        "action": action,
        "resource": {"kind": "cluster", "name": name},
        "actor": SYSTEM,
        "data": data,
    }


def audit(action: str, name: str, key: str) -> dict[str, Any]:
    """What an audit event of the API about cluster ``name`` says, made with API key ``key``."""
    return {
        "type": "audit",
        "action": action,
        "resource": {"kind": "cluster", "name": name},
        "actor": {"kind": "apikey", "id": key},
        "data": {},
    }


def phase(name: str, before: str, after: str, **extra: Any) -> dict[str, Any]:
    return platform("cluster.phase_changed", name, **{"from": before, "to": after}, **extra)


async def cluster_events(
    client: httpx.AsyncClient, tenant: TenantFixture, name: str
) -> list[dict[str, Any]]:
    """The cluster's events, oldest first, as compared here (without id, time, hash)."""
    found = await events(client, tenant, kind="cluster", name=name)
    shown = ("type", "action", "resource", "actor", "data")
    return [{key: event[key] for key in shown} for event in reversed(found)]


class Failing:
    """The simulator, until told to fail: then every apply observes a failed deployment (as
    the Kubernetes orchestrator reports a stalled release)."""

    def __init__(self, inner: SimulatorOrchestrator) -> None:
        self.inner = inner
        self.failure: str | None = None

    async def apply(self, spec: ClusterSpec, fence: WriteFence) -> Observation:
        if self.failure is not None:
            return Observation(stage=Stage.failed, message=self.failure)
        return await self.inner.apply(spec, fence)

    async def delete(self, spec: ClusterSpec, fence: WriteFence) -> Observation:
        return await self.inner.delete(spec, fence)


class Looks:
    """The cluster reconciler driven by hand, one look (every due row once) at a time, with
    a simulator whose steps are all due at once: a new cluster is Provisioning after its
    first look and Running after its second."""

    def __init__(self, database: Database, orchestrator: Orchestrator | None = None) -> None:
        self.database = database
        self.simulator = SimulatorOrchestrator(database, step_seconds=0)
        reconciler = ClusterReconciler(
            orchestrator or self.simulator,
            load_versions(),
            plans=load_plans(),
            progress_seconds=3600,
            resync_seconds=3600,
        )
        self.runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)

    async def look(self) -> int:
        return await self.runner.run_once()

    async def nudge(self, name: str) -> None:
        """Ask for a look at ``name`` now (as a spec change or a resync would)."""
        # A moment ago: due for the next fetch whatever this process's estimate of the
        # database's clock is off by.
        due = await self.database.clock.now() - timedelta(seconds=1)
        async with self.database.transaction() as session:
            await session.execute(
                update(Cluster).where(Cluster.name == name).values(reconcile_at=due)
            )


@pytest.fixture
async def paused(
    database: Database, database_url: str, tmp_path: Path
) -> AsyncIterator[httpx.AsyncClient]:
    """The API without reconcilers: the tests drive the cluster reconciler themselves."""
    settings = make_settings(database_url, tmp_path, run_reconcilers=False)
    async with running_app(settings) as app, api_client(app) as client:
        yield client


async def test_a_created_cluster_records_create_then_provisioning_then_running(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """The reconcilers of the app itself, with the simulator stepping on its own."""
    tenant = await factory.tenant()
    await create_cluster(client, tenant.path, tenant.admin_key, "dev")
    await wait_running(client, tenant.path, tenant.admin_key, "dev")

    recorded = await cluster_events(client, tenant, "dev")
    assert recorded == [
        audit("cluster.create", "dev", await key_id(client, tenant, "admin")),
        phase("dev", "Pending", "Provisioning"),
        phase("dev", "Provisioning", "Running"),
    ]
    # Filtered as a subscriber would: the platform events only, by action.
    changes = await events(client, tenant, type="platform", action="cluster.phase_changed")
    assert [event["data"]["to"] for event in changes] == ["Running", "Provisioning"]


async def test_looks_that_change_nothing_record_nothing(
    paused: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant(plan=Plan.pro)
    await create_cluster(paused, tenant.path, tenant.admin_key, "ha", highAvailability=True)
    looks = Looks(database)
    assert await looks.look() == 1
    assert await looks.look() == 1
    expected = [
        phase("ha", "Pending", "Provisioning"),
        phase("ha", "Provisioning", "Running"),
        platform("cluster.ha_phase_changed", "ha", **{"from": "pending", "to": "ha-healthy"}),
    ]
    assert (await cluster_events(paused, tenant, "ha"))[1:] == expected

    for _ in range(3):
        await looks.nudge("ha")
        assert await looks.look() == 1  # looked at again: the same observation
    assert await looks.look() == 0  # nothing due
    assert (await cluster_events(paused, tenant, "ha"))[1:] == expected


async def test_an_upgrade_records_its_start_and_completion(
    paused: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    await create_cluster(paused, tenant.path, tenant.admin_key, "dev", version="1.32")
    looks = Looks(database)
    await looks.look()
    await looks.look()
    before = await cluster_events(paused, tenant, "dev")

    patched = await paused.patch(
        f"{tenant.path}/clusters/dev", json={"version": "1.33"}, headers=headers
    )
    assert patched.status_code == 200, patched.text
    assert await looks.look() == 1
    started = await cluster_events(paused, tenant, "dev")
    assert started[len(before) :] == [
        audit("cluster.update", "dev", await key_id(paused, tenant, "admin")),
        phase("dev", "Running", "Upgrading"),
        platform("cluster.upgrade_started", "dev", **{"from": V1_32, "to": V1_33}),
    ]
    assert await looks.look() == 1
    done = await cluster_events(paused, tenant, "dev")
    assert done[len(started) :] == [
        phase("dev", "Upgrading", "Running"),
        platform("cluster.upgrade_completed", "dev", **{"from": V1_32, "to": V1_33}),
    ]
    shown = await paused.get(f"{tenant.path}/clusters/dev", headers=headers)
    assert shown.json()["status"]["kubernetesVersion"] == V1_33


async def test_a_failed_upgrade_records_the_failure_and_its_reason(
    paused: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    failing = Failing(SimulatorOrchestrator(database, step_seconds=0))
    looks = Looks(database, failing)
    await create_cluster(paused, tenant.path, tenant.admin_key, "dev", version="1.32")
    await looks.look()
    await looks.look()
    before = await cluster_events(paused, tenant, "dev")
    patched = await paused.patch(
        f"{tenant.path}/clusters/dev", json={"version": "1.33"}, headers=bearer(tenant.admin_key)
    )
    assert patched.status_code == 200, patched.text
    failing.failure = "Flux stopped: upgrade retries exhausted"

    assert await looks.look() == 1
    recorded = (await cluster_events(paused, tenant, "dev"))[len(before) + 1 :]
    reason = failing.failure
    assert recorded == [
        phase("dev", "Running", "Failed", reason=reason),
        platform("cluster.upgrade_failed", "dev", **{"from": V1_32, "to": V1_33}, reason=reason),
    ]
    await looks.nudge("dev")
    assert await looks.look() == 1  # still failed: nothing new
    assert (await cluster_events(paused, tenant, "dev"))[len(before) + 1 :] == recorded


async def test_a_deletion_records_terminating_after_its_audit_event_then_deleted(
    paused: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    await create_cluster(paused, tenant.path, tenant.admin_key, "dev")
    looks = Looks(database)
    await looks.look()
    await looks.look()
    before = await cluster_events(paused, tenant, "dev")

    deleted = await paused.delete(f"{tenant.path}/clusters/dev", headers=headers)
    assert deleted.status_code == 202, deleted.text
    again = await paused.delete(f"{tenant.path}/clusters/dev", headers=headers)
    assert again.status_code == 202, again.text  # already Terminating: no phase change
    requested = (await cluster_events(paused, tenant, "dev"))[len(before) :]
    assert [(event["type"], event["action"]) for event in requested] == [
        ("audit", "cluster.delete"),
        ("platform", "cluster.phase_changed"),
        ("audit", "cluster.delete"),
    ]
    assert requested[1] == phase("dev", "Running", "Terminating")

    # The simulator tears it down (stopping, then gone), a look at a time.
    worked = [await looks.look() for _ in range(3)]
    assert worked == [1, 1, 0]
    gone = await paused.get(f"{tenant.path}/clusters/dev", headers=headers)
    assert gone.status_code == 404
    recorded = (await cluster_events(paused, tenant, "dev"))[len(before) + 3 :]
    assert recorded == [phase("dev", "Terminating", "Deleted")]


async def test_ha_degradation_and_recovery_are_recorded_but_not_during_teardown(
    paused: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant(plan=Plan.pro)
    headers = bearer(tenant.admin_key)
    await create_cluster(paused, tenant.path, tenant.admin_key, "ha", highAvailability=True)
    looks = Looks(database)
    await looks.look()
    await looks.look()
    async with database.transaction() as session:
        statement = select(Cluster.uid).where(Cluster.tenant_id == tenant.id)
        uid = (await session.execute(statement)).scalar_one()
    before = await cluster_events(paused, tenant, "ha")

    # The operator's simulated faults: a control-plane replica fails, then restarts.
    await looks.simulator.fail_replicas(uid, "control-plane", 1)
    await looks.nudge("ha")
    assert await looks.look() == 1
    await looks.simulator.recover(uid)
    await looks.nudge("ha")
    assert await looks.look() == 1

    def ha(before: str, after: str) -> dict[str, Any]:
        return platform("cluster.ha_phase_changed", "ha", **{"from": before, "to": after})

    faults = (await cluster_events(paused, tenant, "ha"))[len(before) :]
    assert faults == [ha("ha-healthy", "ha-degraded"), ha("ha-degraded", "ha-healthy")]

    # Failing again as it is deleted: the teardown's replicas are no news.
    await looks.simulator.fail_replicas(uid, "control-plane", 1)
    deleted = await paused.delete(f"{tenant.path}/clusters/ha", headers=headers)
    assert deleted.status_code == 202, deleted.text
    assert [await looks.look() for _ in range(3)] == [1, 1, 0]
    teardown = (await cluster_events(paused, tenant, "ha"))[len(before) + len(faults) :]
    assert [(event["type"], event["action"]) for event in teardown] == [
        ("audit", "cluster.delete"),
        ("platform", "cluster.phase_changed"),
        ("platform", "cluster.phase_changed"),
    ]
    assert [event["data"]["to"] for event in teardown[1:]] == ["Terminating", "Deleted"]


def test_an_upgrade_seen_only_once_done_is_both_started_and_completed() -> None:
    """A remote orchestrator may upgrade between two looks (the reconciler was down): the
    version it runs changed, Running to Running. After a failure, only its completion."""

    def row(phase: str) -> Cluster:
        return Cluster(name="dev", phase=phase, ha_phase="", kubernetes_version=V1_32)

    status = {"phase": "Running", "ha_phase": "", "kubernetes_version": V1_33}
    seen = [
        (event.action, event.data) for event in status_events(row("Running"), status, V1_33, "")
    ]
    versions = {"from": V1_32, "to": V1_33}
    assert seen == [
        ("cluster.upgrade_started", versions),
        ("cluster.upgrade_completed", versions),
    ]
    after_failure = status_events(row("Failed"), status, V1_33, "")
    assert [(event.action, event.data) for event in after_failure] == [
        ("cluster.phase_changed", {"from": "Failed", "to": "Running"}),
        ("cluster.upgrade_completed", versions),
    ]
