"""An API replica whose clock is ten minutes off (libfaketime) stamps a cluster by the
database's clock (db/clock.py): its createdAt, reconcile_at, history, conditions and the
simulator's steps. By its own clock, a replica ahead showed createdAt in the future, wrote
history in the future and left the deletion it acknowledged undone for ten minutes.

PostgreSQL only: with SQLite the database's clock is the machine's (docs/reconcilers.md).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tenantplane.db.engine import Database
from tests.conftest import TEST_SECRET
from tests.factories import Factory
from tests.faketime import (
    SLACK,
    SkewedApi,
    assert_database_time,
    database_clock_now,
    database_rows,
    parse_time,
)
from tests.http_client import bearer

DEADLINE_SECONDS = 60.0


async def _poll(
    client: httpx.AsyncClient, path: str, headers: dict[str, str], done: Any, database: Database
) -> httpx.Response:
    """GET ``path`` until ``done(response)``; every condition shown on the way is checked
    to be no later than the database's time."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + DEADLINE_SECONDS
    while True:
        response = await client.get(path, headers=headers)
        now = await database_clock_now(database)
        if response.status_code == 200:
            for condition in response.json()["status"]["conditions"]:
                shown = parse_time(condition["lastTransitionTime"])
                assert shown <= now + SLACK, f"a condition in the future: {condition}"
        if done(response):
            return response
        assert loop.time() < give_up, f"gave up waiting on {path}: {response.text}"
        await asyncio.sleep(0.05)


async def test_a_skewed_replica_stamps_a_cluster_by_the_database_clock(
    skewed_replica: SkewedApi,
) -> None:
    skewed, database = skewed_replica, skewed_replica.database
    tenant = await Factory(database, TEST_SECRET.encode()).tenant()
    headers = bearer(tenant.admin_key)
    path = f"{tenant.path}/clusters/skewed"
    async with httpx.AsyncClient(base_url=f"{skewed.base_url}/api/v1", timeout=30) as client:
        before = await database_clock_now(database)
        created = await client.post(
            f"{tenant.path}/clusters", json={"name": "skewed"}, headers=headers
        )
        after = await database_clock_now(database)
        assert created.status_code == 201, created.text
        assert_database_time(parse_time(created.json()["createdAt"]), before, after, "createdAt")
        (row,) = await database_rows(
            database, "SELECT created_at, uid FROM clusters WHERE tenant_id = :id", id=tenant.id
        )
        assert_database_time(row.created_at, before, after, "created_at")

        running = await _poll(
            client,
            path,
            headers,
            lambda response: response.json()["status"]["phase"] == "Running",
            database,
        )
        # Converged as fast as its simulated steps (0.05 s each), not ten minutes later.
        assert running.json()["createdAt"] == created.json()["createdAt"]
        (deployment,) = await database_rows(
            database, "SELECT created_at FROM simulator_clusters WHERE uid = :uid", uid=row.uid
        )
        assert_database_time(
            deployment.created_at, before, await database_clock_now(database), "simulator"
        )

        resized_before = await database_clock_now(database)
        resized = await client.patch(
            path,
            json={"resources": {"cpu": "2"}},
            headers={**headers, "If-Match": running.headers["ETag"]},
        )
        resized_after = await database_clock_now(database)
        assert resized.status_code == 200, resized.text
        (changed,) = await database_rows(
            database,
            "SELECT at FROM cluster_history WHERE event = 'spec_changed' AND cluster_uid = :uid",
            uid=row.uid,
        )
        assert_database_time(changed.at, resized_before, resized_after, "the spec change's history")

        deleted_before = await database_clock_now(database)
        deleted = await client.delete(path, headers=headers)
        deleted_after = await database_clock_now(database)
        assert deleted.status_code in (200, 202, 204), deleted.text
        (requested,) = await database_rows(
            database, "SELECT deletion_requested_at FROM clusters WHERE uid = :uid", uid=row.uid
        )
        assert_database_time(
            requested.deletion_requested_at, deleted_before, deleted_after, "deletion"
        )
        # The acknowledged delete is carried out at once, not once the replica's clock
        # has come round to the time it stamped.
        await _poll(client, path, headers, lambda response: response.status_code == 404, database)

    now = await database_clock_now(database)
    history = await database_rows(
        database,
        "SELECT id, at, event, phase FROM cluster_history WHERE cluster_uid = :uid ORDER BY id",
        uid=row.uid,
    )
    assert history[0].event == "created"
    assert history[-1].phase == "Deleted"
    assert all(entry.at <= now for entry in history), history
    stamps = [entry.at for entry in history]
    assert stamps == sorted(stamps), f"history out of order: {history}"
