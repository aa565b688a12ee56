"""The secret reconciler's steps driven one at a time (no runner), to show what happens when
desired state changes between ``act`` and ``apply``. Each step runs in the sessions the runner
gives this reconciler (``single_statements``: autocommit on PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select, update

from tenantplane.db.engine import Database
from tenantplane.providers.sync import ClusterRef, CopySpec
from tenantplane.providers.sync.simulator import SimulatorSyncProvider
from tenantplane.reconcile.fence import LeaseLost, WriteFence
from tenantplane.reconcile.fetcher import Fetcher
from tenantplane.reconcile.registry import ReconcileContext
from tenantplane.reconcile.runner import ReconcilerRunner
from tenantplane.secret.models import Secret
from tenantplane.secret.reconciler import SecretReconciler, build_secret_reconciler
from tenantplane.secret.sync_view import SecretView
from tests.conftest import make_settings
from tests.factories import Factory, expire_lease, fence_of
from tests.http_client import api_client, bearer, running_app
from tests.secret.support import copies_in, target_statuses
from tests.statements import statements_sent

SECRETS = SecretReconciler.table


@asynccontextmanager
async def served(
    database: Database, database_url: str, tmp_path: Path
) -> AsyncIterator[tuple[httpx.AsyncClient, SecretReconciler]]:
    """The API (its reconcilers off) and a secret reconciler to drive by hand."""
    settings = make_settings(database_url, tmp_path, run_reconcilers=False)
    reconciler = build_secret_reconciler(ReconcileContext(settings, database))
    assert isinstance(reconciler, SecretReconciler)
    async with running_app(settings) as app, api_client(app) as client:
        yield client, reconciler


async def loaded(database: Database, reconciler: SecretReconciler, row_id: int) -> SecretView:
    async with database.statements() as session:
        snapshot = await reconciler.load(session, row_id)
    assert snapshot is not None
    return snapshot


async def one_pass(database: Database, reconciler: SecretReconciler) -> None:
    [lease] = await Fetcher(database, SECRETS, "test").lease(1, timedelta(seconds=30))
    snapshot = await loaded(database, reconciler, lease.row_id)
    outcome = await reconciler.act(snapshot, fence_of(database, lease))
    async with database.statements() as session:
        await reconciler.apply(session, lease.guard(session), snapshot, outcome)


async def test_a_patch_during_a_pass_is_not_overwritten_by_it(
    factory: Factory, database: Database, database_url: str, tmp_path: Path
) -> None:
    tenant = await factory.tenant()
    prod = await factory.cluster_row(tenant.id, "prod")
    stage = await factory.cluster_row(tenant.id, "stage")
    async with served(database, database_url, tmp_path) as (client, reconciler):
        headers = bearer(tenant.admin_key)
        created = await client.post(
            f"{tenant.path}/secrets",
            json={
                "name": "app",
                "secretPath": "a",
                "sync": [{"cluster": "prod", "namespace": "a"}],
            },
            headers=headers,
        )
        assert created.status_code == 201

        fetcher = Fetcher(database, SECRETS, "test")
        [lease] = await fetcher.lease(10, timedelta(seconds=30))
        snapshot = await loaded(database, reconciler, lease.row_id)
        outcome = await reconciler.act(snapshot, fence_of(database, lease))  # places prod/a
        assert await copies_in(database, prod.uid) == {("a", "app")}

        # The targets change while the pass is between act and apply.
        patched = await client.patch(
            f"{tenant.path}/secrets/app",
            json={"sync": [{"cluster": "stage", "namespace": "b"}]},
            headers=headers,
        )
        assert patched.status_code == 200
        async with database.statements() as session:
            await reconciler.apply(session, lease.guard(session), snapshot, outcome)

        # The stale pass did not write the old targets' status over the new spec …
        body = (await client.get(f"{tenant.path}/secrets/app", headers=headers)).json()
        assert target_statuses(body) == [("stage", "b", "app", "Pending", "Reconciling")]
        assert body["status"]["phase"] == "Pending"
        async with database.sessionmaker() as session:
            row = (await session.execute(select(Secret))).scalar_one()
        # … but recorded the copy it placed, released its lease and left the row due.
        assert [entry["clusterUid"] for entry in row.applied] == [prod.uid]
        assert row.lock_token is None
        assert row.reconcile_at is not None
        assert row.observed_generation == 0

        # The next pass moves the copy.
        await one_pass(database, reconciler)
        body = (await client.get(f"{tenant.path}/secrets/app", headers=headers)).json()
        assert target_statuses(body) == [("stage", "b", "app", "Synced", "Synced")]
        assert body["status"]["phase"] == "Synced"
    assert await copies_in(database, prod.uid) == set()
    assert await copies_in(database, stage.uid) == {("b", "app")}


async def test_a_pass_that_lost_its_lease_writes_nothing(
    factory: Factory, database: Database, database_url: str, tmp_path: Path
) -> None:
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    async with served(database, database_url, tmp_path) as (client, reconciler):
        headers = bearer(tenant.admin_key)
        created = await client.post(
            f"{tenant.path}/secrets",
            json={
                "name": "app",
                "secretPath": "a",
                "sync": [{"cluster": "prod", "namespace": "a"}],
            },
            headers=headers,
        )
        version = created.json()["resourceVersion"]
        # A pass acts under its lease, which then lapses and is taken over before it applies.
        [stale] = await Fetcher(database, SECRETS, "slow").lease(1, timedelta(seconds=30))
        snapshot = await loaded(database, reconciler, stale.row_id)
        outcome = await reconciler.act(snapshot, fence_of(database, stale))
        await expire_lease(database, stale)
        [fresh] = await Fetcher(database, SECRETS, "fast").lease(1, timedelta(seconds=30))
        async with database.statements() as session:
            await reconciler.apply(session, stale.guard(session), snapshot, outcome)
        # Nor may it act again: its fence no longer holds.
        with pytest.raises(LeaseLost):
            await reconciler.act(snapshot, fence_of(database, stale))
        body = (await client.get(f"{tenant.path}/secrets/app", headers=headers)).json()
        assert body["resourceVersion"] == version
        assert body["status"]["phase"] == "Pending"
        async with database.sessionmaker() as session:
            row = (await session.execute(select(Secret))).scalar_one()
        assert row.lock_token == fresh.token


async def test_a_batch_applies_each_secret_under_its_own_lease_and_generation(
    factory: Factory, database: Database, database_url: str, tmp_path: Path
) -> None:
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    async with served(database, database_url, tmp_path) as (client, reconciler):
        headers = bearer(tenant.admin_key)
        for name in ("kept", "patched", "stolen"):
            created = await client.post(
                f"{tenant.path}/secrets", json={"name": name, "secretPath": name}, headers=headers
            )
            assert created.status_code == 201
        versions = {
            item["name"]: item["resourceVersion"]
            for item in (await client.get(f"{tenant.path}/secrets", headers=headers)).json()[
                "items"
            ]
        }
        leases = await Fetcher(database, SECRETS, "batch").lease(10, timedelta(seconds=30))
        async with database.statements() as session:
            loaded_batch = await reconciler.load_batch(session, [lease.row_id for lease in leases])
        snapshots = {row_id: view for row_id, view in loaded_batch.items() if view is not None}
        assert len(snapshots) == len(leases) == 3
        by_name = {snapshots[lease.row_id].name: lease for lease in leases}
        outcomes = {
            lease.row_id: await reconciler.act(snapshots[lease.row_id], fence_of(database, lease))
            for lease in leases
        }
        # Between act and apply: one secret's targets change, another's lease is taken over.
        patched = await client.patch(
            f"{tenant.path}/secrets/patched",
            json={"sync": [{"cluster": "prod", "namespace": "a"}]},
            headers=headers,
        )
        assert patched.status_code == 200
        async with database.transaction() as session:
            await session.execute(
                update(Secret)
                .where(Secret.id == by_name["stolen"].row_id)
                .values(lock_token="another-worker")
            )
        async with database.statements() as session:
            await reconciler.apply_batch(
                session,
                [
                    (lease.guard(session), snapshots[lease.row_id], outcomes[lease.row_id])
                    for lease in leases
                ],
            )
        bodies = {
            item["name"]: item
            for item in (await client.get(f"{tenant.path}/secrets", headers=headers)).json()[
                "items"
            ]
        }
    async with database.sessionmaker() as session:
        rows = {row.name: row for row in (await session.execute(select(Secret))).scalars()}
    # Written: the status of the generation acted on, the lease ended, resourceVersion bumped.
    assert bodies["kept"]["status"]["phase"] == "Synced"
    assert int(bodies["kept"]["resourceVersion"]) == int(versions["kept"]) + 1
    assert rows["kept"].observed_generation == 1
    assert rows["kept"].lock_token is None
    # The PATCH wins: its status stands, the lease is ended, the row stays due.
    assert target_statuses(bodies["patched"]) == [
        ("prod", "a", "patched", "Pending", "Reconciling")
    ]
    assert rows["patched"].observed_generation == 0
    assert rows["patched"].lock_token is None
    assert rows["patched"].reconcile_at is not None
    # Taken over: nothing written.
    assert bodies["stolen"]["status"]["phase"] == "Pending"
    assert bodies["stolen"]["resourceVersion"] == versions["stolen"]
    assert rows["stolen"].lock_token == "another-worker"


class CallsInFlight(SimulatorSyncProvider):
    """The simulated External Secrets, counting the copies being placed at once."""

    def __init__(self, database: Database) -> None:
        super().__init__(database)
        self.in_flight = 0
        self.most = 0

    async def apply(self, cluster: ClusterRef, copy: CopySpec, fence: WriteFence) -> bool:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            return await super().apply(cluster, copy, fence)
        finally:
            self.in_flight -= 1


async def test_a_look_takes_a_whole_batch_and_bounds_its_calls_to_the_concurrency(
    factory: Factory, database: Database, database_url: str, tmp_path: Path
) -> None:
    """A look's reads and writes are one statement each whatever its rows, so it takes up
    to TENANTPLANE_RECONCILE_BATCH_SIZE of them; the calls to the clusters (and to vault)
    stay at most TENANTPLANE_RECONCILE_CONCURRENCY at once."""
    settings = make_settings(
        database_url, tmp_path, reconcile_batch_size=12, reconcile_concurrency=3
    )
    built = build_secret_reconciler(ReconcileContext(settings, database))
    assert isinstance(built, SecretReconciler)
    provider = CallsInFlight(database)
    reconciler = SecretReconciler(
        built.vault,
        provider,
        resync_seconds=settings.secret_resync_seconds,
        retry_seconds=settings.secret_retry_seconds,
        concurrency=settings.reconcile_concurrency,
        batch_size=settings.reconcile_batch_size,
    )
    assert built.concurrency == reconciler.concurrency == 12
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    async with (
        running_app(make_settings(database_url, tmp_path, run_reconcilers=False)) as app,
        api_client(app) as client,
    ):
        for index in range(12):
            body = {
                "name": f"s-{index}",
                "secretPath": f"apps/s-{index}",
                "sync": [{"cluster": "prod", "namespace": "apps"}],
            }
            created = await client.post(
                f"{tenant.path}/secrets", json=body, headers=bearer(tenant.admin_key)
            )
            assert created.status_code == 201, created.text
    with statements_sent(database) as sent:
        worked = await ReconcilerRunner(database, reconciler).run_once()
    assert worked == 12
    # One look: the statuses of the batch are one statement, sent once.
    status_writes = [sql for sql in sent if sql.startswith("UPDATE SECRETS AS T SET")]
    assert len(status_writes) == 1, len(status_writes)
    async with database.sessionmaker() as session:
        phases = (await session.execute(select(Secret.phase))).scalars().all()
    assert phases == ["Synced"] * 12
    assert provider.most == 3
