"""An API replica whose clock is ten minutes off (libfaketime) stamps a secret by the
database's clock (db/clock.py): createdAt, its conditions, when it is due and when its
deletion was asked for, with sync targets and without. PostgreSQL only: with SQLite the
database's clock is the machine's."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx

from tests.conftest import TEST_SECRET
from tests.factories import Factory
from tests.faketime import (
    SkewedApi,
    assert_database_time,
    database_clock_now,
    database_rows,
    parse_time,
)
from tests.http_client import bearer


def _assert_conditions_at(document: dict[str, Any], before: datetime, after: datetime) -> None:
    for condition in document["status"]["conditions"]:
        shown = parse_time(condition["lastTransitionTime"])
        assert_database_time(shown, before, after, f"condition {condition['type']}")


async def test_a_skewed_replica_stamps_a_secret_by_the_database_clock(
    skewed_replica: SkewedApi,
) -> None:
    database = skewed_replica.database
    factory = Factory(database, TEST_SECRET.encode())
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    headers = bearer(tenant.admin_key)
    secrets = f"{tenant.path}/secrets"
    base_url = f"{skewed_replica.base_url}/api/v1"
    start = await database_clock_now(database)
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        for name, body in (
            ("plain", {}),
            ("synced", {"sync": [{"cluster": "prod", "namespace": "default"}]}),
        ):
            before = await database_clock_now(database)
            created = await client.post(
                secrets, json={"name": name, "secretPath": f"apps/{name}", **body}, headers=headers
            )
            after = await database_clock_now(database)
            assert created.status_code == 201, created.text
            shown = parse_time(created.json()["createdAt"])
            assert_database_time(shown, before, after, "createdAt")
            _assert_conditions_at(created.json(), before, after)
            (row,) = await database_rows(
                database,
                "SELECT created_at FROM secrets WHERE tenant_id = :id AND name = :name",
                id=tenant.id,
                name=name,
            )
            assert_database_time(row.created_at, before, after, "created_at")

        changed = await client.patch(f"{secrets}/synced", json={"sync": []}, headers=headers)
        assert changed.status_code == 200, changed.text
        _assert_conditions_at(changed.json(), start, await database_clock_now(database))

        before = await database_clock_now(database)
        deleted = await client.delete(f"{secrets}/plain", headers=headers)
        after = await database_clock_now(database)
        assert deleted.status_code in (200, 202, 204), deleted.text
    requested = await database_rows(
        database,
        "SELECT deletion_requested_at FROM secrets WHERE tenant_id = :id AND name = 'plain'",
        id=tenant.id,
    )
    # Gone already, or asked for at the database's time.
    for row in requested:
        assert_database_time(row.deletion_requested_at, before, after, "deletion_requested_at")
