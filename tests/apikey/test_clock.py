"""An API replica whose clock is ten minutes off (libfaketime) judges and stamps API keys by
the database's clock (db/clock.py): a key expiring in two minutes is accepted at creation
and in use (a replica ahead refused both), an expired one is refused (a replica behind took
it), and createdAt and lastUsedAt are the database's time; a member's createdAt too.
PostgreSQL only: with SQLite the database's clock is the machine's."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx

from tenantplane.db.base import rfc3339
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

DEADLINE_SECONDS = 30.0


async def test_a_skewed_replica_judges_api_keys_by_the_database_clock(
    skewed_replica: SkewedApi,
) -> None:
    database = skewed_replica.database
    tenant = await Factory(database, TEST_SECRET.encode()).tenant()
    keys = f"{tenant.path}/apikeys"
    base_url = f"{skewed_replica.base_url}/api/v1"
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        before = await database_clock_now(database)
        expires = before + timedelta(minutes=2)
        created = await client.post(
            keys,
            json={"displayName": "ci", "role": "admin", "expiresAt": rfc3339(expires)},
            headers=bearer(tenant.admin_key),
        )
        after = await database_clock_now(database)
        assert created.status_code == 201, created.text
        body = created.json()
        assert_database_time(parse_time(body["createdAt"]), before, after, "createdAt")

        before = await database_clock_now(database)
        used = await client.get(f"{tenant.path}/clusters", headers=bearer(body["key"]))
        after = await database_clock_now(database)
        assert used.status_code == 200, used.text
        # lastUsedAt is recorded in a transaction of its own: polled.
        loop = asyncio.get_running_loop()
        give_up = loop.time() + DEADLINE_SECONDS
        while not (
            rows := await database_rows(
                database,
                "SELECT last_used_at FROM api_keys WHERE id = :id AND last_used_at IS NOT NULL",
                id=body["id"],
            )
        ):
            assert loop.time() < give_up, "the key's use was never recorded"
            await asyncio.sleep(0.05)
        assert_database_time(rows[0].last_used_at, before, after, "lastUsedAt")

        short = await client.post(
            keys,
            json={
                "displayName": "short",
                "role": "readonly",
                "expiresAt": rfc3339(await database_clock_now(database) + timedelta(seconds=1)),
            },
            headers=bearer(tenant.admin_key),
        )
        assert short.status_code == 201, short.text
        # Until it has expired by the database's clock (a second or so).
        left = parse_time(short.json()["expiresAt"]) - await database_clock_now(database)
        await asyncio.sleep(max(left.total_seconds(), 0) + 0.2)
        expired = await client.get(f"{tenant.path}/clusters", headers=bearer(short.json()["key"]))
        assert expired.status_code == 401, expired.text

        before = await database_clock_now(database)
        member = await client.post(
            f"{tenant.path}/members",
            json={"email": "late@example.com", "role": "readonly"},
            headers=bearer(tenant.admin_key),
        )
        after = await database_clock_now(database)
        assert member.status_code == 201, member.text
    (row,) = await database_rows(
        database,
        "SELECT created_at FROM members WHERE tenant_id = :id AND email = 'late@example.com'",
        id=tenant.id,
    )
    assert_database_time(row.created_at, before, after, "the member's created_at")
