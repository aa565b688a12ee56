"""Fencing in real deployments: nothing done by a process that no longer holds its lease.

On PostgreSQL with real `billing run`, `tenantplane worker` and `tenantplane serve`
processes, and a loopback Paddle that records every create and can hold its answers:

- a `billing run` SIGKILLed or SIGSTOPped after Paddle accepted its charges, before it
  recorded the answers, followed by a worker or by a second `billing run`: one transaction
  per invoice, every invoice Paid once its transaction settles, no transaction that no
  invoice records;
- a `billing run` frozen between its look-up (nothing found) and its create, woken after
  another process charged: it creates nothing;
- a worker frozen while it holds a secret's lease, the secret deleted through the API and
  cleaned up by the other worker: after SIGCONT no copy of it exists in any cluster;
- the same for a cluster: after SIGCONT nothing of it is left in the simulated host.

Each test prints its seed (``TENANTPLANE_TEST_SEED`` replays one): it orders the releases
and times the signals.
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from tenantplane.billing.models import ChargeAttempt, Invoice
from tenantplane.cluster.models import Cluster
from tenantplane.db.engine import Database
from tenantplane.providers.orchestrator.simulator_models import SimulatedCluster
from tenantplane.providers.sync.simulator_models import SimulatedSecretCopy
from tenantplane.secret.models import Secret
from tenantplane.tenant.models import Plan
from tests.factories import TenantFixture
from tests.fakes.paddle import FakePaddle
from tests.fakes.server import Hold
from tests.fakes.vault import FakeVault, serve
from tests.http_client import bearer
from tests.system.conftest import Connections, Figures
from tests.system.harness import Fleet, Node, client_of, eventually, owner_of
from tests.system.test_topology import (
    BILLED_AT,
    DATABASE_TIMEOUTS,
    billing_env,
    linked_tenants,
    send_retrying,
    topology_env,
)

pytestmark = pytest.mark.system

DEADLINE_SECONDS = 120.0
# Two tenants backdated to September: two invoices each by BILLED_AT, all four charged at
# once by one `billing run` (the invoices reconciler works four at a time).
TENANTS = 2
INVOICES = 2 * TENANTS


def seeded(figures: Figures) -> random.Random:
    seed = int(os.environ.get("TENANTPLANE_TEST_SEED") or secrets.randbelow(2**32))
    print(f"\n[seed] TENANTPLANE_TEST_SEED={seed}")
    figures["seed"] = seed
    return random.Random(seed)


async def invoices_of(database: Database) -> list[Invoice]:
    async with database.sessionmaker() as session:
        return list((await session.execute(select(Invoice).order_by(Invoice.id))).scalars())


async def leases_lapsed(database: Database) -> bool:
    """No invoice is held by a live lease (by the database's clock)."""
    async with database.sessionmaker() as session:
        live = await session.scalar(
            select(func.count()).where(Invoice.lock_expires_at > func.now())
        )
    return live == 0


async def all_charged(database: Database) -> list[Invoice] | None:
    invoices = await invoices_of(database)
    charged = len(invoices) == INVOICES and all(i.provider_transaction_id for i in invoices)
    return invoices if charged else None


async def first_run_held(
    fleet: Fleet,
    connections: Connections,
    tmp_path: Path,
    postgres_url: str,
    paddle: FakePaddle,
    method: str,
) -> tuple[dict[str, str], Database, list[Hold], Node]:
    """A deployment with tenants to charge, and a first `billing run` whose calls of
    ``method`` to ``/transactions`` (one per invoice) all wait for their answers."""
    env = billing_env(tmp_path, postgres_url, paddle, timeout_seconds=1)
    fleet.run("migrate", env, "migrate", "--json")
    database, factory = connections.open(postgres_url)
    await linked_tenants(factory, paddle, TENANTS)
    holds = [paddle.hold_next(method, "/transactions") for _ in range(INVOICES)]
    first = fleet.command("billing-first", env, "billing", "run", "--now", BILLED_AT)
    first.start()

    async def reached() -> bool:
        return all(hold.reached.is_set() for hold in holds)

    await eventually(reached, f"every {method} /transactions to wait", DEADLINE_SECONDS)
    return env, database, holds, first


def charges_by_invoice(paddle: FakePaddle) -> Counter[str]:
    return Counter(
        str((transaction.get("custom_data") or {}).get("tenantplane_invoice_uid"))
        for transaction in paddle.state.transactions.values()
    )


async def settle_through_webhooks(
    api: Node, paddle: FakePaddle, database: Database, invoices: list[Invoice]
) -> list[Invoice]:
    """Paddle reports every transaction completed; every invoice must end Paid."""
    async with client_of(api, 60.0) as client:
        for invoice in invoices:
            data = paddle.settle(invoice.provider_transaction_id, "completed")
            body = paddle.event("transaction.completed", data)
            response = await client.post(
                "/api/v1/webhooks/paddle", content=body, headers=paddle.signed_headers(body)
            )
            assert response.status_code == 200, response.text

    async def all_paid() -> list[Invoice] | None:
        current = await invoices_of(database)
        return current if all(i.phase == "Paid" for i in current) else None

    return await eventually(all_paid, "every invoice Paid", DEADLINE_SECONDS)


async def attempts_of(database: Database) -> Counter[str]:
    async with database.sessionmaker() as session:
        outcomes = (await session.execute(select(ChargeAttempt.outcome))).scalars()
        return Counter(outcomes)


@pytest.mark.parametrize("successor", ["worker", "billing-run"])
@pytest.mark.parametrize("signal", ["kill", "stop"])
async def test_a_charge_accepted_before_its_process_died_or_froze_is_made_once(
    postgres_url: str,
    fleet: Fleet,
    connections: Connections,
    figures: Figures,
    tmp_path: Path,
    signal: str,
    successor: str,
) -> None:
    rng = seeded(figures)
    paddle = FakePaddle().start()
    try:
        # Paddle creates each transaction, then holds its answer.
        env, database, holds, first = await first_run_held(
            fleet, connections, tmp_path, postgres_url, paddle, "POST"
        )
        await asyncio.sleep(rng.uniform(0, 0.5))
        first.kill() if signal == "kill" else first.pause()
        for hold in rng.sample(holds, len(holds)):
            hold.release()  # the answers go to a process that will never read them in time

        if successor == "worker":
            fleet.start(fleet.worker("worker", env))
        else:
            # A `billing run` only takes invoices no live lease holds.
            await eventually(lambda: leases_lapsed(database), "the leases to lapse", 60)
            fleet.run("billing-second", env, "billing", "run", "--now", BILLED_AT)
        invoices = await eventually(
            lambda: all_charged(database), "every invoice charged", DEADLINE_SECONDS
        )
        if signal == "stop":
            first.resume()
            await asyncio.to_thread(first.wait)
        api = fleet.api("api", {**env, "TENANTPLANE_RUN_RECONCILERS": "true"})
        fleet.start(api)
        paid = await settle_through_webhooks(api, paddle, database, invoices)

        per_invoice = charges_by_invoice(paddle)
        recorded = {invoice.provider_transaction_id for invoice in paid}
        orphans = set(paddle.state.transactions) - recorded
        attempts = await attempts_of(database)
        figures.update(
            invoices=len(paid),
            creates=len(paddle.calls("POST", "/transactions")),
            look_ups=len(paddle.calls("GET", "/transactions")),
            attempts=dict(attempts),
            orphans=len(orphans),
        )
        assert sorted(per_invoice.values()) == [1] * INVOICES, per_invoice
        assert set(per_invoice) == {invoice.uid for invoice in paid}
        assert orphans == set()
        assert len(paddle.calls("POST", "/transactions")) == INVOICES
        # The successor adopted each charge it found; the first process's stayed pending
        # until then (it never recorded an answer).
        assert attempts["adopted"] == INVOICES
    finally:
        paddle.stop()


async def test_a_process_frozen_between_its_look_up_and_its_create_creates_nothing(
    postgres_url: str, fleet: Fleet, connections: Connections, figures: Figures, tmp_path: Path
) -> None:
    rng = seeded(figures)
    paddle = FakePaddle().start()
    try:
        # Each look-up finds nothing, and its answer is held: the process then freezes.
        env, database, holds, first = await first_run_held(
            fleet, connections, tmp_path, postgres_url, paddle, "GET"
        )
        first.pause()
        await eventually(lambda: leases_lapsed(database), "the leases to lapse", 60)
        fleet.run("billing-second", env, "billing", "run", "--now", BILLED_AT)
        invoices = await eventually(
            lambda: all_charged(database), "every invoice charged", DEADLINE_SECONDS
        )
        for hold in rng.sample(holds, len(holds)):
            hold.release()

        async def answered() -> bool:
            return all(hold.answered.is_set() for hold in holds)

        # Every answer waits in the frozen process's sockets before it wakes: its one-second
        # read timeout lapsed while it was stopped, so an answer written later would lose
        # the race to that timeout and the process would stop for another reason.
        await eventually(answered, "every look-up answered", DEADLINE_SECONDS)
        first.resume()
        code = await asyncio.to_thread(first.wait)
        creates = paddle.calls("POST", "/transactions")
        figures.update(invoices=len(invoices), creates=len(creates), first_exit=code)
        assert code == 0, first.tail()
        assert len(creates) == INVOICES, "the woken process created charges"
        assert sorted(charges_by_invoice(paddle).values()) == [1] * INVOICES
        assert "lease lost" in first.log.read_text()
    finally:
        paddle.stop()


# -- secrets and clusters -----------------------------------------------------------------


async def running_cluster(client: httpx.AsyncClient, tenant: TenantFixture) -> None:
    created = await client.post(
        f"/api/v1{tenant.path}/clusters", json={"name": "prod"}, headers=bearer(tenant.admin_key)
    )
    assert created.status_code == 201, created.text

    async def running() -> bool:
        response = await client.get(
            f"/api/v1{tenant.path}/clusters/prod", headers=bearer(tenant.admin_key)
        )
        return bool(response.json()["status"]["phase"] == "Running")

    await eventually(running, "the cluster to run", DEADLINE_SECONDS)


async def row_of(database: Database, model: Any, tenant: TenantFixture) -> tuple[int, str]:
    """Id and uid of the tenant's one row of ``model`` (a cluster or a secret)."""
    async with database.sessionmaker() as session:
        row = (
            await session.execute(select(model.id, model.uid).where(model.tenant_id == tenant.id))
        ).one()
    return int(row.id), str(row.uid)


async def holder_of(database: Database, table: Any, row_id: int, nodes: list[Node]) -> Node | None:
    """The process whose live lease holds the row, if any."""
    async with database.sessionmaker() as session:
        owner = await session.scalar(
            select(table.c.lock_owner).where(
                table.c.id == row_id, table.c.lock_expires_at > func.now()
            )
        )
    return next((node for node in nodes if owner and owner_of(node) in owner), None)


async def test_a_secret_deleted_while_its_worker_was_frozen_is_not_copied_back(
    postgres_url: str, fleet: Fleet, connections: Connections, figures: Figures, tmp_path: Path
) -> None:
    rng = seeded(figures)
    vault = FakeVault()
    with serve(vault) as vault_url:
        vault.enable_kv2("tenant-acme")
        env = topology_env(
            tmp_path,
            postgres_url,
            simulator_step_seconds="0.3",
            vault_addr=vault_url,
            vault_token=vault.token,
            vault_mount_template="tenant-{tenant}",
        )
        deployment = fleet.deploy(env, apis=1, workers=2)
        database, factory = connections.open(postgres_url)
        tenant = await factory.tenant(name="acme", plan=Plan.enterprise)
        vault.put("tenant-acme", "db", {"password": secrets.token_hex(8)})
        async with client_of(deployment.apis[0], 60.0) as client:
            await running_cluster(client, tenant)
            # The first pass of the secret stops at the vault, its lease held.
            hold = vault.hold_next("GET", "tenant-acme/")
            created = await client.post(
                f"/api/v1{tenant.path}/secrets",
                json={
                    "name": "db",
                    "secretPath": "db",
                    "sync": [{"cluster": "prod", "namespace": "app"}],
                },
                headers=bearer(tenant.admin_key),
            )
            assert created.status_code == 201, created.text
            await eventually(lambda: _true(hold.reached.is_set()), "the vault check", 60)
            row_id, uid = await row_of(database, Secret, tenant)
            frozen = await holder_of(database, Secret.__table__, row_id, deployment.workers)
            assert frozen is not None, "no worker holds the secret's lease"
            frozen.pause()
            deleted = await client.delete(
                f"/api/v1{tenant.path}/secrets/db", headers=bearer(tenant.admin_key)
            )
            assert deleted.status_code == 204, deleted.text

        async def cleaned_up() -> bool:
            async with database.sessionmaker() as session:
                return await session.get(Secret, row_id) is None

        await eventually(cleaned_up, "the other worker to finish the deletion", 60)
        await asyncio.sleep(rng.uniform(0, 0.5))
        hold.release()
        # As with Paddle's look-ups: the answer must be there before the worker wakes.
        await eventually(lambda: _true(hold.answered.is_set()), "the vault answer", 60)
        frozen.resume()

        async def copies() -> list[SimulatedSecretCopy]:
            async with database.sessionmaker() as session:
                statement = select(SimulatedSecretCopy).where(SimulatedSecretCopy.owner_uid == uid)
                return list((await session.execute(statement)).scalars())

        async def pass_ended() -> bool:
            # The woken pass either stops at its fence or writes its copy back.
            return "lease lost" in frozen.log.read_text() or bool(await copies())

        await eventually(pass_ended, "the woken worker's pass to end", 60)
        left = await copies()
        figures.update(copies_left=len(left))
        assert left == [], "the frozen worker copied the deleted secret back"


async def test_a_cluster_deleted_while_its_worker_was_frozen_leaves_nothing_behind(
    postgres_url: str, fleet: Fleet, connections: Connections, figures: Figures, tmp_path: Path
) -> None:
    rng = seeded(figures)
    # The frozen worker's transaction, if it froze in one, is ended by PostgreSQL.
    env = topology_env(tmp_path, postgres_url, simulator_step_seconds="0.3", **DATABASE_TIMEOUTS)
    deployment = fleet.deploy(env, apis=1, workers=2)
    database, factory = connections.open(postgres_url)
    tenant = await factory.tenant(plan=Plan.enterprise)
    async with client_of(deployment.apis[0], 60.0) as client:
        created = await client.post(
            f"/api/v1{tenant.path}/clusters",
            json={"name": "prod", "highAvailability": True},
            headers=bearer(tenant.admin_key),
        )
        assert created.status_code == 201, created.text
        row_id, uid = await row_of(database, Cluster, tenant)

        async def held() -> Node | None:
            return await holder_of(database, Cluster.__table__, row_id, deployment.workers)

        frozen = await eventually(held, "a worker to hold the cluster's lease", 60, 0.002)
        frozen.pause()
        # Frozen inside its transaction, the worker holds the row until PostgreSQL ends its
        # session: the delete is answered 503 (retry) meanwhile, as the spec has it.
        answers: Counter[str] = Counter()
        deleted = await send_retrying(
            client, "DELETE", f"/api/v1{tenant.path}/clusters/prod", tenant.admin_key, answers
        )
        figures.update(delete_answers=dict(answers))
        assert deleted.status_code == 202, deleted.text

        async def gone() -> bool:
            response = await client.get(
                f"/api/v1{tenant.path}/clusters/prod", headers=bearer(tenant.admin_key)
            )
            return response.status_code == 404

        await eventually(gone, "the other worker to finish the deletion", DEADLINE_SECONDS)
    await asyncio.sleep(rng.uniform(0, 0.5))
    frozen.resume()
    await asyncio.sleep(3.0)
    async with database.sessionmaker() as session:
        left = await session.get(SimulatedCluster, uid)
    figures.update(deployment_left=left is not None and left.stage != "deleted")
    assert left is None or left.stage == "deleted", "the frozen worker brought the cluster back"


async def _true(value: bool) -> bool:
    return value
