"""The scaled-out deployment as operators run it: PostgreSQL and Redis, API replicas
(`tenantplane serve`) and workers (`tenantplane worker`) as real processes on loopback.

- ~100 concurrent creates over two APIs, two workers and the APIs' own reconcilers: every
  cluster provisioned once (the provisioning calls the simulated orchestrator received);
- two overlapping `tenantplane billing run`s: one invoice, and one charge, per tenant and
  period;
- a SIGKILLed worker's and a SIGSTOPped worker's clusters taken over by the other worker;
- four replicas started at once on an empty database all come up, the schema at head;
- the rate limit is one budget across the APIs (Redis).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import func, select, text

from tenantplane.billing.models import CreditEntry, Invoice
from tenantplane.cluster.models import Cluster
from tenantplane.db.engine import Database
from tenantplane.db.migrate import alembic_config
from tenantplane.providers.orchestrator.simulator_models import SimulatedCluster
from tenantplane.tenant.models import Plan
from tests.factories import Factory, TenantFixture
from tests.fakes.paddle import FakePaddle
from tests.http_client import bearer
from tests.system.conftest import Connections, Figures
from tests.system.harness import (
    Fleet,
    Node,
    client_of,
    deployment_env,
    eventually,
    libpq_dsn,
    owner_of,
    system_redis_url,
)

pytestmark = pytest.mark.system

CONVERGE_SECONDS = 180.0
LEASE_SECONDS = 3
# Far beyond a lease plus the idle-in-transaction timeout below (takeover takes seconds).
TAKEOVER_SECONDS = 60.0
BUSY_CLUSTERS = 20
# A simulator's look holds its committed leases only while its batch runs (5-20 ms, one
# batch at a time per worker) and the clusters provision in a few seconds: a worker is
# caught holding leases by polling faster than a batch lasts.
LEASE_POLL_SECONDS = 0.005
# A stopped worker's session is ended by PostgreSQL after this long idle in a transaction,
# which releases its row locks (the deployment's settings for the database timeouts).
DATABASE_TIMEOUTS = {
    "db_lock_timeout_seconds": "2",
    "db_statement_timeout_seconds": "30",
    "db_idle_in_transaction_timeout_seconds": "5",
}


def topology_env(tmp_path: Path, database_url: str, **settings: str) -> dict[str, str]:
    return deployment_env(
        tmp_path,
        database_url,
        redis_url=system_redis_url(),
        reconcile_lease_seconds=str(LEASE_SECONDS),
        reconcile_idle_poll_seconds="0.5",
        **settings,
    )


async def clusters_of(client: httpx.AsyncClient, tenant: TenantFixture) -> list[dict[str, Any]]:
    response = await client.get(f"/api/v1{tenant.path}/clusters", headers=bearer(tenant.admin_key))
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


async def all_running(
    client: httpx.AsyncClient, tenants: Iterable[TenantFixture], expected: int
) -> list[dict[str, Any]] | None:
    items = [item for tenant in tenants for item in await clusters_of(client, tenant)]
    if len(items) == expected and all(item["status"]["phase"] == "Running" for item in items):
        return items
    return None


def billing_env(
    tmp_path: Path, database_url: str, paddle: FakePaddle, *, timeout_seconds: float
) -> dict[str, str]:
    """``topology_env`` charging through the loopback Paddle (on the simulator: a demo's
    setting, which billing refuses unless allowed)."""
    return topology_env(
        tmp_path,
        database_url,
        billing_provider="paddle",
        allow_simulated_billing="true",
        paddle_api_url=paddle.url,
        paddle_api_key=paddle.api_key,
        paddle_webhook_secret=paddle.webhook_secret,
        paddle_timeout_seconds=str(timeout_seconds),
    )


async def linked_tenants(factory: Factory, paddle: FakePaddle, count: int) -> list[TenantFixture]:
    """Tenants billed since September, each a Paddle customer with an address; no
    scheduled billing cycle behind the test."""
    await factory.billing.billing_schedule(None)
    tenants = []
    for _ in range(count):
        tenant = await factory.tenant()
        await factory.billing.backdate_tenant(tenant.id, datetime(2026, 9, 1, tzinfo=UTC))
        customer, _ = paddle.add_customer()
        address = paddle.state.addresses[customer][0]["id"]
        await factory.billing.link(tenant.name, customer, address_id=address)
        tenants.append(tenant)
    return tenants


RETRIES = 20


async def send_retrying(
    client: httpx.AsyncClient,
    method: str,
    path: str,
    key: str,
    tally: Counter[str],
    body: dict[str, Any] | None = None,
) -> httpx.Response:
    """A request retried after a 503 as its Retry-After says (a busy database refuses rather
    than keeps a request waiting; nothing was written), as the spec asks clients to."""
    for _ in range(RETRIES):
        response = await client.request(method, path, json=body, headers=bearer(key))
        tally[str(response.status_code)] += 1
        if response.status_code != 503:
            return response
        await asyncio.sleep(min(float(response.headers.get("Retry-After", "1")), 2.0))
    return response


async def create_clusters(
    clients: list[httpx.AsyncClient],
    tenant: TenantFixture,
    count: int,
    tally: Counter[str],
    **spec: Any,
) -> list[httpx.Response]:
    """``count`` clusters created at once, the requests spread over ``clients``; ``tally``
    counts the answers by status."""
    return list(
        await asyncio.gather(
            *(
                send_retrying(
                    clients[index % len(clients)],
                    "POST",
                    f"/api/v1{tenant.path}/clusters",
                    tenant.admin_key,
                    tally,
                    {"name": f"c-{index}", **spec},
                )
                for index in range(count)
            )
        )
    )


async def provisioning_calls(database: Database) -> dict[str, int]:
    """Per cluster uid, the provisioning calls the simulated orchestrator received."""
    async with database.sessionmaker() as session:
        rows = await session.execute(select(SimulatedCluster.uid, SimulatedCluster.provision_count))
        return {uid: count for uid, count in rows}


def http(node: Node, timeout: float = 60.0) -> httpx.AsyncClient:
    return client_of(node, timeout)


async def test_concurrent_creates_over_two_apis_provision_each_cluster_once(
    postgres_url: str, fleet: Fleet, connections: Connections, figures: Figures, tmp_path: Path
) -> None:
    env = topology_env(tmp_path, postgres_url, simulator_step_seconds="0.1")
    # Every process reconciles (the very same settings everywhere): four contenders per row.
    deployment = fleet.deploy(env, apis=2, workers=2, api_reconcilers=True)
    database, factory = connections.open(postgres_url)
    tenants = [await factory.tenant(plan=Plan.enterprise) for _ in range(4)]
    per_tenant = 25
    clients = [http(api) for api in deployment.apis]
    answers: Counter[str] = Counter()
    try:
        started = time.monotonic()
        batches = await asyncio.gather(
            *(
                create_clusters(clients, tenant, per_tenant, answers, highAvailability=index == 0)
                for index, tenant in enumerate(tenants)
            )
        )
        statuses = Counter(response.status_code for batch in batches for response in batch)
        assert statuses == {201: per_tenant * len(tenants)}, statuses
        await eventually(
            lambda: all_running(clients[0], tenants, per_tenant * len(tenants)),
            "every cluster to be Running",
            CONVERGE_SECONDS,
            interval=0.5,
        )
        converged = time.monotonic() - started
    finally:
        for client in clients:
            await client.aclose()

    calls = await provisioning_calls(database)
    async with database.sessionmaker() as session:
        uids = set((await session.execute(select(Cluster.uid))).scalars())
    figures.update(
        creates=per_tenant * len(tenants),
        create_requests=dict(answers),
        apis=len(deployment.apis),
        workers=len(deployment.workers),
        seconds_to_all_running=round(converged, 1),
        provisioning_calls=sum(calls.values()),
        most_calls_for_one_cluster=max(calls.values()),
    )
    assert set(calls) == uids
    assert {uid: count for uid, count in calls.items() if count != 1} == {}


# -- billing -----------------------------------------------------------------------------

BILLED_AT = "2026-11-01T00:00:00Z"  # closes September and October 2026


async def backend(dsn: str, application: str) -> dict[str, Any] | None:
    """The one session of a process (by its PGAPPNAME) that is inside a transaction."""
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as connection:
        cursor = await connection.execute(
            "SELECT state, wait_event_type FROM pg_stat_activity"
            " WHERE application_name = %s AND xact_start IS NOT NULL",
            (application,),
        )
        row = await cursor.fetchone()
    return None if row is None else {"state": row[0], "wait_event_type": row[1]}


def by_period(invoices: Iterable[Invoice]) -> dict[tuple[int, datetime], list[str]]:
    """Invoice names by tenant and period start."""
    periods: dict[tuple[int, datetime], list[str]] = {}
    for invoice in invoices:
        periods.setdefault((invoice.tenant_id, invoice.period_start), []).append(invoice.name)
    return periods


async def test_overlapping_billing_runs_issue_and_charge_each_period_once(
    postgres_url: str, fleet: Fleet, connections: Connections, figures: Figures, tmp_path: Path
) -> None:
    """A slow run (here: paused) is overtaken by a second one that closes the same periods.

    The late run reads a tenant's last billed period, then stops (its session waits on a
    lock the test holds on the credit entries it reads next, and the process is paused);
    the early run bills everything and commits; the late run then carries on. Whatever the
    interleaving, each tenant and period must have one invoice and be charged once."""
    paddle = FakePaddle().start()
    try:
        env = billing_env(tmp_path, postgres_url, paddle, timeout_seconds=5)
        fleet.run("migrate", env, "migrate", "--json")
        database, factory = connections.open(postgres_url)
        tenants = await linked_tenants(factory, paddle, 3)

        dsn = libpq_dsn(postgres_url)
        late = fleet.command("billing-late", env, "billing", "run", "--now", BILLED_AT, "--json")
        with psycopg.connect(dsn) as blocker:
            blocker.execute(f"LOCK TABLE {CreditEntry.__tablename__} IN ACCESS EXCLUSIVE MODE")
            late.start()

            async def late_waits() -> bool:
                assert late.alive, f"the late run ended before reading credits: {late.tail()}"
                session = await backend(dsn, late.name)
                return session is not None and session["wait_event_type"] == "Lock"

            await eventually(late_waits, "the late run to reach the credit entries", 120)
            late.pause()
            blocker.rollback()

        async def late_idle() -> bool:
            session = await backend(dsn, late.name)
            return session is not None and session["state"] == "idle in transaction"

        # Its last statement is answered; the paused process has not read the answer yet.
        await eventually(late_idle, "the late run's session to be idle", 60)
        early = fleet.command("billing-early", env, "billing", "run", "--now", BILLED_AT, "--json")
        early.start()
        early_code = await asyncio.to_thread(early.wait)
        late.resume()
        late_code = await asyncio.to_thread(late.wait)
        assert early_code == 0, early.tail()
        assert late_code == 0, late.tail()

        async with database.sessionmaker() as session:
            invoices = (await session.execute(select(Invoice))).scalars().all()
        charged = [
            call.body["custom_data"]["tenantplane_invoice_uid"]
            for call in paddle.calls("POST", "/transactions")
        ]
        figures.update(
            tenants=len(tenants),
            billing_runs=2,
            invoices=len(invoices),
            charges=len(charged),
            invoice_names=sorted(invoice.name for invoice in invoices),
        )
        invoiced = by_period(invoices)
        assert {p: names for p, names in invoiced.items() if len(names) > 1} == {}, (
            "periods invoiced more than once"
        )
        assert len(invoiced) == 2 * len(tenants)
        charges = by_period(invoice for invoice in invoices if invoice.uid in charged)
        assert sorted(charged) == sorted(set(charged)), "an invoice was charged twice"
        assert {p: names for p, names in charges.items() if len(names) > 1} == {}, (
            "periods charged more than once"
        )
        assert len(charges) == 2 * len(tenants)
    finally:
        paddle.stop()


# -- workers that die or freeze ------------------------------------------------------------


async def live_leases(database: Database, node: Node) -> dict[int, str]:
    """Clusters leased by ``node`` whose lease has not expired: id → lease token."""
    async with database.sessionmaker() as session:
        rows = await session.execute(
            select(Cluster.id, Cluster.lock_token).where(
                Cluster.lock_owner.contains(owner_of(node)),
                Cluster.lock_expires_at > func.now(),
            )
        )
        return {row_id: token for row_id, token in rows if token is not None}


async def taken_over(database: Database, held: dict[int, str]) -> bool:
    """Every lease in ``held`` has been replaced (another process leased the row since)."""
    async with database.sessionmaker() as session:
        rows = await session.execute(
            select(Cluster.id, Cluster.lock_token).where(Cluster.id.in_(held))
        )
        return all(token != held[row_id] for row_id, token in rows)


async def takeover_state(database: Database, held: dict[int, str], nodes: Iterable[Node]) -> str:
    """Why a takeover has not happened: the held rows, every session of the deployment and
    the lock waits, and which processes are alive (for a failure's message)."""
    async with database.sessionmaker() as session:
        rows = await session.execute(
            select(
                Cluster.id,
                Cluster.lock_owner,
                Cluster.lock_token,
                Cluster.lock_expires_at,
                Cluster.reconcile_at,
                Cluster.phase,
            ).where(Cluster.id.in_(held))
        )
        clusters = [
            {**row._mapping, "lock_token": "held" if row.lock_token == held[row.id] else "new"}
            for row in rows
        ]
        activity = await session.execute(
            text(
                "SELECT application_name, pid, state, wait_event_type, wait_event,"
                " backend_xid, now() - xact_start AS in_transaction, left(query, 120) AS query"
                " FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() ORDER BY application_name, pid"
            )
        )
        sessions = [dict(row._mapping) for row in activity]
        waits = await session.execute(
            text(
                "SELECT pid, locktype, relation::regclass::text, mode"
                " FROM pg_locks WHERE NOT granted"
            )
        )
        waiting = [dict(row._mapping) for row in waits]
        now = (await session.execute(select(func.now()))).scalar_one()
    alive = {node.name: node.alive for node in nodes}
    lines = [f"now: {now}", f"processes alive: {alive}", "held rows:", *map(str, clusters)]
    lines.append("sessions:")
    lines += [*map(str, sessions), "lock waits:", *map(str, waiting)]
    return "\n".join(lines)


async def busy_deployment(
    fleet: Fleet, connections: Connections, tmp_path: Path, postgres_url: str, **settings: str
) -> tuple[Database, Node, list[TenantFixture], list[Node]]:
    """One API (no reconcilers) and two workers with BUSY_CLUSTERS HA clusters in progress."""
    env = topology_env(tmp_path, postgres_url, simulator_step_seconds="0.3", **settings)
    deployment = fleet.deploy(env, apis=1, workers=2)
    database, factory = connections.open(postgres_url)
    tenant = await factory.tenant(plan=Plan.enterprise)
    async with http(deployment.apis[0]) as client:
        responses = await create_clusters(
            [client], tenant, BUSY_CLUSTERS, Counter(), highAvailability=True
        )
    assert {response.status_code for response in responses} == {201}
    return database, deployment.apis[0], [tenant], deployment.workers


async def test_a_sigkilled_workers_clusters_are_taken_over(
    postgres_url: str, fleet: Fleet, connections: Connections, figures: Figures, tmp_path: Path
) -> None:
    database, api, tenants, (victim, survivor) = await busy_deployment(
        fleet, connections, tmp_path, postgres_url
    )
    held: dict[int, str] = {}
    attempts = 0
    while not held:
        attempts += 1
        assert attempts <= 5, "the worker never held a lease when it was killed"
        if not victim.alive:
            await asyncio.to_thread(victim.restart)
        await eventually(
            lambda: live_leases(database, victim),
            "worker-1 to hold leases",
            120,
            interval=LEASE_POLL_SECONDS,
        )
        victim.kill()
        killed_at = time.monotonic()
        held = await live_leases(database, victim)

    await eventually(
        lambda: taken_over(database, held),
        "worker-2 to take the leases over",
        TAKEOVER_SECONDS,
        explain=lambda: takeover_state(database, held, [victim, survivor, api]),
    )
    takeover = time.monotonic() - killed_at
    async with http(api) as client:
        await eventually(
            lambda: all_running(client, tenants, BUSY_CLUSTERS),
            "every cluster to be Running",
            CONVERGE_SECONDS,
            interval=0.5,
        )
    calls = await provisioning_calls(database)
    figures.update(
        leases_held_when_killed=len(held),
        lease_seconds=LEASE_SECONDS,
        takeover_seconds=round(takeover, 1),
        kills=attempts,
    )
    assert survivor.alive
    assert {uid: count for uid, count in calls.items() if count != 1} == {}


async def stopped_in_a_transaction(database: Database, node: Node) -> list[dict[str, Any]]:
    """Sessions of ``node`` idle inside a transaction that holds locks (it has an xid)."""
    async with database.sessionmaker() as session:
        rows = await session.execute(
            text(
                "SELECT pid, state FROM pg_stat_activity WHERE application_name = :name"
                " AND state LIKE 'idle in transaction%' AND backend_xid IS NOT NULL"
            ),
            {"name": node.name},
        )
        return [dict(row._mapping) for row in rows]


PATCH_TIMEOUT_SECONDS = 30.0


async def patch_cpu(client: httpx.AsyncClient, tenant: TenantFixture, name: str) -> str:
    """The answer to a resize: its status (and Retry-After), or that none came."""
    try:
        response = await client.patch(
            f"/api/v1{tenant.path}/clusters/{name}",
            json={"resources": {"cpu": "2"}},
            headers=bearer(tenant.admin_key),
        )
    except httpx.TimeoutException:
        return f"no answer within {PATCH_TIMEOUT_SECONDS:.0f}s"
    retry_after = " Retry-After" if "Retry-After" in response.headers else ""
    return f"{response.status_code}{retry_after}"


async def test_a_sigstopped_workers_clusters_are_taken_over(
    postgres_url: str, fleet: Fleet, connections: Connections, figures: Figures, tmp_path: Path
) -> None:
    """A worker paused inside a transaction (a frozen VM, a partition) keeps its sessions
    and row locks: its leases lapse, and the database's timeouts must free its locks so
    that the other worker takes its clusters over and API writes are not held up."""
    database, api, tenants, (victim, survivor) = await busy_deployment(
        fleet, connections, tmp_path, postgres_url, **DATABASE_TIMEOUTS
    )
    tries = 0
    frozen: list[dict[str, Any]] = []
    try:
        while not frozen:
            tries += 1
            assert tries <= 200, "never caught worker-1 inside a transaction"
            await eventually(
                lambda: live_leases(database, victim),
                "worker-1's leases",
                120,
                interval=LEASE_POLL_SECONDS,
            )
            victim.pause()
            frozen = await stopped_in_a_transaction(database, victim)
            if not frozen:
                victim.resume()
        stopped_at = time.monotonic()
        held = await live_leases(database, victim)

        async with database.sessionmaker() as session:
            statement = select(Cluster.name).where(Cluster.id.in_(held))
            names = list((await session.execute(statement)).scalars())
        async with http(api, timeout=PATCH_TIMEOUT_SECONDS) as client:
            # API writes to the frozen worker's clusters, meanwhile: answered (200, or 503
            # with Retry-After), not held behind its locks.
            patches = asyncio.gather(*(patch_cpu(client, tenants[0], name) for name in names[:5]))
            await eventually(
                lambda: taken_over(database, held),
                "worker-2 to take the frozen worker's leases over",
                TAKEOVER_SECONDS,
                explain=lambda: takeover_state(database, held, [victim, survivor, api]),
            )
            takeover = time.monotonic() - stopped_at
            await eventually(
                lambda: all_running(client, tenants, BUSY_CLUSTERS),
                "every cluster to be Running with worker-1 frozen",
                CONVERGE_SECONDS,
                interval=0.5,
            )
            patched = dict(zip(names, await patches, strict=False))
    finally:
        figures.update(
            stop_attempts=tries,
            sessions_frozen_in_a_transaction=len(frozen),
            lease_seconds=LEASE_SECONDS,
            idle_in_transaction_timeout_seconds=DATABASE_TIMEOUTS[
                "db_idle_in_transaction_timeout_seconds"
            ],
        )
        if victim.alive:
            victim.resume()
    figures.update(
        leases_held_when_stopped=len(held),
        takeover_seconds=round(takeover, 1),
        patches=patched,
    )
    assert all(answer in ("200", "503 Retry-After") for answer in patched.values()), patched
    assert survivor.alive
    calls = await provisioning_calls(database)
    assert {uid: count for uid, count in calls.items() if count != 1} == {}


# -- starting -------------------------------------------------------------------------------


async def test_four_replicas_start_at_once_on_an_empty_database(
    postgres_url: str, fleet: Fleet, connections: Connections, figures: Figures, tmp_path: Path
) -> None:
    env = {**topology_env(tmp_path, postgres_url), "TENANTPLANE_RUN_RECONCILERS": "false"}
    replicas = [fleet.api(f"replica-{index}", env) for index in range(1, 5)]
    started = time.monotonic()
    await asyncio.to_thread(fleet.start, *replicas)
    ready = time.monotonic() - started
    figures.update(replicas=len(replicas), seconds_until_all_ready=round(ready, 1))
    database, _ = connections.open(postgres_url)
    async with database.sessionmaker() as session:
        version = await session.execute(text("SELECT version_num FROM alembic_version"))
        versions = list(version.scalars())
    heads = ScriptDirectory.from_config(alembic_config(postgres_url)).get_heads()
    assert versions == heads
    assert all(replica.alive for replica in replicas)


# -- rate limit -----------------------------------------------------------------------------


def random_address() -> str:
    return "10." + ".".join(str(secrets.randbelow(256)) for _ in range(3))


async def test_the_rate_limit_is_one_budget_across_the_apis(
    postgres_url: str, fleet: Fleet, connections: Connections, figures: Figures, tmp_path: Path
) -> None:
    limit = 10
    env = topology_env(
        tmp_path, postgres_url, rate_limit=f"{limit}/minute", trusted_proxies="127.0.0.1"
    )
    deployment = fleet.deploy(env, apis=2, workers=0)
    _, factory = connections.open(postgres_url)
    tenant = await factory.tenant()
    # Client addresses of their own: no earlier run's hits count (runs share Redis).
    address, other = random_address(), random_address()
    clients = [http(api) for api in deployment.apis]
    statuses: list[int] = []
    try:
        for index in range(limit + 2):
            response = await clients[index % 2].get(
                f"/api/v1{tenant.path}",
                headers={**bearer(tenant.admin_key), "X-Forwarded-For": address},
            )
            statuses.append(response.status_code)
        control = await clients[1].get(
            f"/api/v1{tenant.path}",
            headers={**bearer(tenant.admin_key), "X-Forwarded-For": other},
        )
    finally:
        for client in clients:
            await client.aclose()
    figures.update(limit=f"{limit}/minute", apis=2, statuses=statuses)
    # Alternating between the APIs, the eleventh request is the first one refused, on both.
    assert statuses == [200] * limit + [429, 429]
    assert control.status_code == 200
