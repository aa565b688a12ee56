"""The hash chain: `tenantplane events verify` accepts the stream as written and names the
first event a hand edit broke; purging old events keeps the rest verifiable; `events export`
writes JSON lines that recompute to the stored hashes."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import delete, select, update
from typer.testing import CliRunner

from tenantplane.cli import app as cli_app
from tenantplane.db.engine import Database
from tenantplane.event import service
from tenantplane.event.chain import canonical_json
from tenantplane.event.models import Event, EventChain
from tests.cluster.polling import poll
from tests.conftest import TEST_SECRET
from tests.factories import Factory, TenantFixture
from tests.http_client import bearer

Cli = Callable[..., Awaitable[str]]


@pytest.fixture
def cli(database_url: str) -> Cli:
    """The operator CLI on the test database: its standard output (or error, ``errors``)."""
    env = {"TENANTPLANE_DATABASE_URL": database_url, "TENANTPLANE_SECRET_KEY": TEST_SECRET}

    async def run(*args: str, expect: int = 0, errors: bool = False) -> str:
        result = await asyncio.to_thread(CliRunner().invoke, cli_app, list(args), env=env)
        assert result.exit_code == expect, result.output
        return result.stderr if errors else result.stdout

    return run


async def _stream(
    client: httpx.AsyncClient, tenant: TenantFixture, count: int = 5, first: int = 0
) -> None:
    for index in range(first, first + count):
        body = {"name": f"s{index}", "secretPath": f"apps/s{index}"}
        created = await client.post(
            f"{tenant.path}/secrets", json=body, headers=bearer(tenant.admin_key)
        )
        assert created.status_code == 201, created.text


async def _verify(cli: Cli, tenant: TenantFixture, expect: int = 0) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(
        await cli("events", "verify", tenant.name, "--json", expect=expect)
    )
    return document


async def _edit(database: Database, tenant: TenantFixture, seq: int, **values: Any) -> None:
    async with database.transaction() as session:
        await session.execute(
            update(Event).where(Event.tenant_id == tenant.id, Event.seq == seq).values(**values)
        )


async def test_the_stream_as_written_verifies(
    client: httpx.AsyncClient, factory: Factory, database: Database, cli: Cli
) -> None:
    tenant = await factory.tenant()
    await _stream(client, tenant)
    verified = await _verify(cli, tenant)
    assert verified["verified"] is True
    assert (verified["events"], verified["firstSeq"], verified["lastSeq"]) == (5, 1, 5)
    assert "verifies: 5 events" in await cli("events", "verify", tenant.name)


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        ("body", "the hash does not follow from the previous event"),
        ("column", "the stored columns differ from the hashed body"),
        ("hash", "the hash does not follow from the previous event"),
        ("delete", "position 3 is missing"),
    ],
)
async def test_a_hand_edited_row_is_named(
    client: httpx.AsyncClient,
    factory: Factory,
    database: Database,
    cli: Cli,
    edit: str,
    reason: str,
) -> None:
    tenant = await factory.tenant()
    await _stream(client, tenant)
    async with database.transaction() as session:
        third = (
            await session.execute(select(Event).where(Event.tenant_id == tenant.id, Event.seq == 3))
        ).scalar_one()
        body, event_id = third.body, third.id
    if edit == "body":
        # Still canonical JSON, still the same columns: only the hash can tell.
        document = json.loads(body)
        document["status"] = 200
        await _edit(database, tenant, 3, body=canonical_json(document))
    elif edit == "column":
        await _edit(database, tenant, 3, action="secret.delete")
    elif edit == "hash":
        # Rewriting a hash to match its edited body breaks the next event's link instead.
        await _edit(database, tenant, 3, hash=hashlib.sha256(b"forged").hexdigest())
    else:
        async with database.transaction() as session:
            await session.execute(delete(Event).where(Event.tenant_id == tenant.id, Event.seq == 3))
    broken = await _verify(cli, tenant, expect=1)
    assert broken["verified"] is False
    assert broken["firstBreak"]["reason"] == reason
    assert broken["firstBreak"]["position"] == 3
    if edit in {"body", "column", "hash"}:
        assert broken["firstBreak"]["eventId"] == event_id
    message = await cli("events", "verify", tenant.name, expect=1, errors=True)
    # On standard error, so that a script's pipe of standard output sees nothing.
    assert "broken at position 3" in message


async def test_removing_the_newest_events_is_noticed(
    client: httpx.AsyncClient, factory: Factory, database: Database, cli: Cli
) -> None:
    tenant = await factory.tenant()
    await _stream(client, tenant)
    async with database.transaction() as session:
        await session.execute(delete(Event).where(Event.tenant_id == tenant.id, Event.seq >= 4))
    broken = await _verify(cli, tenant, expect=1)
    assert broken["firstBreak"]["position"] == 4
    assert "newest events are missing" in broken["firstBreak"]["reason"]


async def test_a_purge_keeps_the_rest_verifiable(
    client: httpx.AsyncClient, factory: Factory, database: Database, cli: Cli
) -> None:
    tenant = await factory.tenant()
    await _stream(client, tenant, 3)
    async with database.transaction() as session:
        # The first two events were written 40 days ago.
        old = datetime.now(UTC) - timedelta(days=40)
        await session.execute(
            update(Event).where(Event.tenant_id == tenant.id, Event.seq <= 2).values(time=old)
        )
        purged = await service.purge(session, tenant.id, datetime.now(UTC), days=30)
    assert purged == 2
    verified = await _verify(cli, tenant)
    assert (verified["events"], verified["firstSeq"]) == (1, 3)
    async with database.transaction() as session:
        chain = await session.get(EventChain, tenant.id)
        assert chain is not None
        assert chain.purged_seq == 2
    await _stream(client, tenant, 1, first=3)  # the chain goes on from its head
    assert (await _verify(cli, tenant))["events"] == 2


async def test_export_writes_json_lines_that_recompute(
    client: httpx.AsyncClient, factory: Factory, database: Database, cli: Cli
) -> None:
    tenant = await factory.tenant()
    await _stream(client, tenant, 3)
    lines = (await cli("events", "export", tenant.name, "--json")).splitlines()
    exported = [json.loads(line) for line in lines]
    assert [event["resource"]["name"] for event in exported] == ["s0", "s1", "s2"]
    previous = "0" * 64
    for event in exported:
        digest = event.pop("hash")
        body = canonical_json(event).encode()
        assert hashlib.sha256(bytes.fromhex(previous) + body).hexdigest() == digest
        previous = digest
    listed = (
        await client.get(f"{tenant.path}/events", headers=bearer(tenant.readonly_key))
    ).json()["items"]
    assert [event["hash"] for event in listed] == [
        line["hash"] for line in reversed([json.loads(line) for line in lines])
    ]
    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert await cli("events", "export", tenant.name, "--since", future, "--json") == ""
    refused = await cli(
        "events", "export", tenant.name, "--since", "yesterday", expect=1, errors=True
    )
    assert "--since must be an RFC 3339 timestamp" in refused


async def test_the_worker_purges_what_the_plan_no_longer_keeps(
    client: httpx.AsyncClient, factory: Factory, database: Database, cli: Cli
) -> None:
    tenant = await factory.tenant()  # starter: 30 days (catalogue/plans.yaml)
    await _stream(client, tenant, 3)
    async with database.transaction() as session:
        old = datetime.now(UTC) - timedelta(days=31)
        await session.execute(
            update(Event).where(Event.tenant_id == tenant.id, Event.seq <= 2).values(time=old)
        )
        # Due now rather than an hour after the first event.
        await session.execute(
            update(EventChain)
            .where(EventChain.tenant_id == tenant.id)
            .values(reconcile_at=datetime.now(UTC) - timedelta(seconds=1))
        )
    kept = await poll(
        client,
        f"{tenant.path}/events",
        bearer(tenant.readonly_key),
        lambda response: len(response.json()["items"]) == 1,
        "the retention reconciler's purge",
    )
    assert kept.json()["items"][0]["resource"]["name"] == "s2"
    assert (await _verify(cli, tenant))["firstSeq"] == 3
