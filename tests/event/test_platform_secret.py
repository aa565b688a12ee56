"""Platform events of secrets: a sync target that fails (``secret.sync_failed``) and one
that is synced again (``secret.sync_recovered``), recorded by the secret reconciler with the
statuses they describe. Its writes are single statements in autocommit on PostgreSQL; a
batch with events to record is one transaction, so that a status never commits without its
event, nor an event without its status."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from tenantplane.db.engine import Database
from tenantplane.event.log import Draft
from tenantplane.providers.sync import ClusterRef, CopySpec, SyncError
from tenantplane.providers.sync.simulator import SimulatorSyncProvider
from tenantplane.reconcile.fence import WriteFence
from tenantplane.reconcile.registry import ReconcileContext
from tenantplane.reconcile.runner import ReconcilerRunner
from tenantplane.secret import reconciler as secret_reconciler
from tenantplane.secret.models import Secret
from tenantplane.secret.reconciler import SecretReconciler, build_secret_reconciler
from tests.conftest import make_settings
from tests.event.stream import events
from tests.factories import Factory, TenantFixture
from tests.http_client import api_client, bearer, running_app

REFUSED = "admission webhook denied the request: namespace apps is frozen"


class Flaky(SimulatorSyncProvider):
    """The simulated clusters, refusing copies into the clusters named in ``failing``."""

    def __init__(self, database: Database) -> None:
        super().__init__(database)
        self.failing: set[str] = set()

    async def apply(self, cluster: ClusterRef, copy: CopySpec, fence: WriteFence) -> bool:
        if cluster.name in self.failing:
            raise SyncError(REFUSED)
        return await super().apply(cluster, copy, fence)


class Passes:
    """The secret reconciler driven by hand: each ``look`` works every due secret once."""

    def __init__(self, database: Database, reconciler: SecretReconciler) -> None:
        self.database = database
        self.runner = ReconcilerRunner(database, reconciler, idle_poll_seconds=3600)

    async def look(self) -> int:
        # Every secret due a moment ago: a resync, whatever this process's estimate of the
        # database's clock is off by.
        due = await self.database.clock.now() - timedelta(seconds=1)
        async with self.database.transaction() as session:
            await session.execute(update(Secret).values(reconcile_at=due))
        return await self.runner.run_once()


@pytest.fixture
async def served(
    database: Database, database_url: str, tmp_path: Path
) -> AsyncIterator[tuple[httpx.AsyncClient, Flaky, Passes]]:
    """The API (its reconcilers off) and a secret reconciler over ``Flaky`` clusters."""
    settings = make_settings(database_url, tmp_path, run_reconcilers=False)
    built = build_secret_reconciler(ReconcileContext(settings, database))
    assert isinstance(built, SecretReconciler)
    provider = Flaky(database)
    reconciler = SecretReconciler(
        built.vault,
        provider,
        resync_seconds=3600,
        retry_seconds=3600,
        concurrency=settings.reconcile_concurrency,
        batch_size=settings.reconcile_batch_size,
    )
    async with running_app(settings) as app, api_client(app) as client:
        yield client, provider, Passes(database, reconciler)


async def secret_events(client: httpx.AsyncClient, tenant: TenantFixture) -> list[dict[str, Any]]:
    """The platform events of the tenant's secrets, oldest first (without id, time, hash)."""
    found = await events(client, tenant, type="platform", kind="secret")
    shown = ("type", "action", "resource", "actor", "data")
    return [{key: event[key] for key in shown} for event in reversed(found)]


def event(action: str, **data: Any) -> dict[str, Any]:
    return {
        "type": "platform",
        "action": action,
        "resource": {"kind": "secret", "name": "db"},
        "actor": {"kind": "system"},
        "data": data,
    }


def target(cluster: str) -> dict[str, str]:
    return {"cluster": cluster, "namespace": "apps", "secretName": "db"}


async def create_secret(client: httpx.AsyncClient, tenant: TenantFixture) -> None:
    created = await client.post(
        f"{tenant.path}/secrets",
        json={
            "name": "db",
            "secretPath": "apps/db",
            "sync": [
                {"cluster": "prod", "namespace": "apps"},
                {"cluster": "stage", "namespace": "apps"},
            ],
        },
        headers=bearer(tenant.admin_key),
    )
    assert created.status_code == 201, created.text


async def target_phases(client: httpx.AsyncClient, tenant: TenantFixture) -> dict[str, str]:
    shown = await client.get(f"{tenant.path}/secrets/db", headers=bearer(tenant.readonly_key))
    assert shown.status_code == 200, shown.text
    return {entry["cluster"]: entry["phase"] for entry in shown.json()["status"]["syncStatuses"]}


async def test_a_target_that_fails_and_recovers_records_each_transition_once(
    served: tuple[httpx.AsyncClient, Flaky, Passes], factory: Factory
) -> None:
    client, provider, passes = served
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    stage = await factory.cluster_row(tenant.id, "stage")
    await create_secret(client, tenant)

    assert await passes.look() == 1
    assert await target_phases(client, tenant) == {"prod": "Synced", "stage": "Synced"}
    assert await secret_events(client, tenant) == []  # Pending to Synced is no event

    provider.failing = {"stage"}
    assert await passes.look() == 1
    failed = event("secret.sync_failed", **target("stage"), reason="SyncError", message=REFUSED)
    assert await secret_events(client, tenant) == [failed]
    assert await passes.look() == 1  # still failing: nothing new
    assert await secret_events(client, tenant) == [failed]

    provider.failing = set()
    assert await passes.look() == 1
    recovered = event("secret.sync_recovered", **target("stage"))
    assert await secret_events(client, tenant) == [failed, recovered]
    assert await passes.look() == 1
    assert await secret_events(client, tenant) == [failed, recovered]

    # Another reason: the target's cluster is being deleted.
    await factory.request_cluster_deletion(stage)
    assert await passes.look() == 1
    recorded = await secret_events(client, tenant)
    assert recorded[:2] == [failed, recovered]
    assert [(entry["action"], entry["data"]["reason"]) for entry in recorded[2:]] == [
        ("secret.sync_failed", "ClusterDeleted")
    ]
    assert await target_phases(client, tenant) == {"prod": "Synced", "stage": "Failed"}


async def test_a_status_never_commits_without_its_event(
    served: tuple[httpx.AsyncClient, Flaky, Passes],
    factory: Factory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The append fails after the statuses were written: on PostgreSQL, where this
    reconciler's writes are single statements in autocommit, they would have stayed
    committed; the batch's transaction takes them back with it."""
    client, provider, passes = served
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    await factory.cluster_row(tenant.id, "stage")
    await create_secret(client, tenant)
    assert await passes.look() == 1

    async def broken(session: object, drafts: list[tuple[int, Draft]]) -> None:
        if drafts:
            raise RuntimeError("the event could not be appended")

    provider.failing = {"stage"}
    with monkeypatch.context() as patched:
        patched.setattr(secret_reconciler, "append_all", broken)
        assert await passes.look() == 1  # worked, and failed (backed off)
    assert await target_phases(client, tenant) == {"prod": "Synced", "stage": "Synced"}
    assert await secret_events(client, tenant) == []

    assert await passes.look() == 1
    assert await target_phases(client, tenant) == {"prod": "Synced", "stage": "Failed"}
    assert [entry["action"] for entry in await secret_events(client, tenant)] == [
        "secret.sync_failed"
    ]
