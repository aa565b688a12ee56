"""Clocks ten minutes off in a real deployment: one clock for every stamp, the database's.

PostgreSQL and Redis, two API replicas and two workers, leases of 3 s; under libfaketime one
API and one worker run 600 s ahead, the other API and worker 600 s behind. Through the APIs
(each request to an API the seed picks): clusters created, resized and deleted, secrets
created (synced to them), changed and deleted. Each acknowledged change converges about as
fast as in the same deployment without skew (both measured; by their own clocks, replicas
ahead left creates and deletes waiting ten minutes), no stamp lies in the future of the
database's ``now()`` (createdAt, history, conditions, lastSyncTime, the simulator's steps;
``reconcile_at`` no later than a resync), and each cluster's history is in order.
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import statistics
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from tenantplane.db.engine import Database
from tenantplane.tenant.models import Plan
from tests.backends import postgres_database
from tests.conftest import TEST_SECRET
from tests.factories import Factory, TenantFixture
from tests.faketime import skewed_env
from tests.http_client import bearer
from tests.system.conftest import Connections, Figures
from tests.system.harness import Fleet, Node, client_of
from tests.system.test_topology import topology_env

pytestmark = pytest.mark.system

CLUSTERS = 6
DEADLINE_SECONDS = 180.0
# Far below the 600 s a stamp off by the skew delays work, far above a loaded machine's pace.
CONVERGE_BOUND_SECONDS = 60.0
# A stamp "in the future" beyond this (the clock's error is half a round trip on loopback).
FUTURE_SLACK = timedelta(seconds=1)
# reconcile_at may lie ahead by a resync (60 s for secrets) and no more.
RESYNC_BOUND = timedelta(seconds=90)
POLL_SECONDS = 0.1
Check = Callable[[], Awaitable[bool]]


def seeded(figures: Figures) -> random.Random:
    seed = int(os.environ.get("TENANTPLANE_TEST_SEED") or secrets.randbelow(2**32))
    print(f"\n[seed] TENANTPLANE_TEST_SEED={seed}")
    figures["seed"] = seed
    return random.Random(seed)


class Run:
    """One deployment's run of the scenario: its clients, what converged how fast, and the
    latest stamp seen ahead of the database's clock."""

    def __init__(self, database: Database, tenant: TenantFixture, apis: list[Node]) -> None:
        self.database = database
        self.tenant = tenant
        self.clients = [client_of(api, 60.0) for api in apis]
        self.headers = bearer(tenant.admin_key)
        self.seconds: dict[str, list[float]] = {}
        self.ahead = timedelta(0)
        self.ahead_what = ""

    async def now(self) -> datetime:
        async with self.database.sessionmaker() as session:
            value: datetime = (await session.execute(text("SELECT clock_timestamp()"))).scalar_one()
        return value

    def saw(self, stamp: str | datetime | None, now: datetime, what: str) -> None:
        if stamp is None:
            return
        at = (
            stamp
            if isinstance(stamp, datetime)
            else datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        )
        if at - now > self.ahead:
            self.ahead, self.ahead_what = at - now, f"{what} {at.isoformat()}"

    async def request(
        self, rng: random.Random, method: str, path: str, **options: Any
    ) -> httpx.Response:
        client = rng.choice(self.clients)
        response = await client.request(
            method, f"/api/v1{self.tenant.path}{path}", headers=self.headers, **options
        )
        assert response.status_code < 300, f"{method} {path}: {response.text}"
        if response.content:
            self.saw(response.json().get("createdAt"), await self.now(), f"{path} createdAt")
        return response

    async def converge(self, action: str, checks: list[Check]) -> None:
        """Each check polled (acknowledged just now) until it passes; its seconds kept."""
        started = time.monotonic()
        pending = dict(enumerate(checks))
        while pending:
            for index, check in list(pending.items()):
                if await check():
                    self.seconds.setdefault(action, []).append(time.monotonic() - started)
                    del pending[index]
            await self.scan()
            if time.monotonic() - started > DEADLINE_SECONDS:
                pytest.fail(
                    f"{action}: {len(pending)} acknowledged changes not done after "
                    f"{DEADLINE_SECONDS:.0f}s; the latest stamp ahead of the database: "
                    f"{self.ahead.total_seconds():.1f} s ({self.ahead_what or 'none'})"
                )
            await asyncio.sleep(POLL_SECONDS)

    async def shown(self, kind: str, name: str) -> dict[str, Any] | None:
        response = await self.clients[0].get(
            f"/api/v1{self.tenant.path}/{kind}/{name}", headers=self.headers
        )
        if response.status_code == 404:
            return None
        assert response.status_code == 200, response.text
        document: dict[str, Any] = response.json()
        now = await self.now()
        for condition in document["status"].get("conditions", []):
            self.saw(condition.get("lastTransitionTime"), now, f"{kind}/{name} condition")
        for entry in document["status"].get("syncStatuses", []):
            self.saw(entry.get("lastSyncTime"), now, f"{kind}/{name} lastSyncTime")
        return document

    async def scan(self) -> None:
        """Every stored stamp against the database's clock (read after them)."""
        async with self.database.sessionmaker() as session:
            rows = (await session.execute(text(_STAMPS))).all()
            now = (await session.execute(text("SELECT clock_timestamp()"))).scalar_one()
        for what, stamp in rows:
            if what.endswith("reconcile_at"):
                stamp = stamp - RESYNC_BOUND if stamp is not None else None
            self.saw(stamp, now, what)

    async def close(self) -> None:
        for client in self.clients:
            await client.aclose()


# The latest of each stored stamp (reconcile_at: checked against now plus a resync).
_STAMPS = """
SELECT 'clusters.created_at', max(created_at) FROM clusters
UNION ALL SELECT 'clusters.deletion_requested_at', max(deletion_requested_at) FROM clusters
UNION ALL SELECT 'clusters.ha_enabled_at', max(ha_enabled_at) FROM clusters
UNION ALL SELECT 'clusters.reconcile_at', max(reconcile_at) FROM clusters
UNION ALL SELECT 'cluster_history.at', max(at) FROM cluster_history
UNION ALL SELECT 'secrets.created_at', max(created_at) FROM secrets
UNION ALL SELECT 'secrets.deletion_requested_at', max(deletion_requested_at) FROM secrets
UNION ALL SELECT 'secrets.reconcile_at', max(reconcile_at) FROM secrets
UNION ALL SELECT 'simulator_clusters.created_at', max(created_at) FROM simulator_clusters
UNION ALL SELECT 'simulator_clusters.last_step_at', max(last_step_at) FROM simulator_clusters
UNION ALL SELECT 'api_keys.created_at', max(created_at) FROM api_keys
UNION ALL SELECT 'members.created_at', max(created_at) FROM members
"""
_HISTORY_ROWS = "SELECT count(*) FROM cluster_history"
# History rows of one cluster whose time is earlier than the row written before them.
_OUT_OF_ORDER = """
SELECT count(*) FROM (
    SELECT at < lag(at) OVER (PARTITION BY cluster_uid ORDER BY id) AS back FROM cluster_history
) AS ordered WHERE back
"""


async def scenario(run: Run, rng: random.Random) -> None:
    names = [f"c-{index}" for index in range(CLUSTERS)]
    await asyncio.gather(
        *(run.request(rng, "POST", "/clusters", json={"name": name}) for name in names)
    )
    await run.converge(
        "cluster create -> Running", [_phase(run, name, "Running") for name in names]
    )

    await asyncio.gather(
        *(
            run.request(
                rng,
                "POST",
                "/secrets",
                json={
                    "name": f"s-{name}",
                    "secretPath": f"apps/{name}",
                    "sync": [{"cluster": name, "namespace": "default"}],
                },
            )
            for name in names
        )
    )
    await run.converge("secret create -> Synced", [_synced(run, f"s-{name}") for name in names])

    await asyncio.gather(
        *(
            run.request(rng, "PATCH", f"/clusters/{name}", json={"resources": {"cpu": "2"}})
            for name in names
        )
    )
    await run.converge(
        "cluster resize -> observed", [_observed(run, "clusters", name) for name in names]
    )

    await asyncio.gather(
        *(run.request(rng, "PATCH", f"/secrets/s-{name}", json={"sync": []}) for name in names)
    )
    await run.converge(
        "secret change -> observed", [_observed(run, "secrets", f"s-{name}") for name in names]
    )

    await asyncio.gather(*(run.request(rng, "DELETE", f"/secrets/s-{name}") for name in names))
    await run.converge(
        "secret delete -> gone", [_row_gone(run, "secrets", f"s-{name}") for name in names]
    )

    await asyncio.gather(*(run.request(rng, "DELETE", f"/clusters/{name}") for name in names))
    await run.converge("cluster delete -> gone", [_gone(run, name) for name in names])


def _phase(run: Run, name: str, phase: str) -> Check:
    async def check() -> bool:
        document = await run.shown("clusters", name)
        return document is not None and document["status"]["phase"] == phase

    return check


def _synced(run: Run, name: str) -> Check:
    async def check() -> bool:
        document = await run.shown("secrets", name)
        return document is not None and document["status"]["phase"] == "Synced"

    return check


def _gone(run: Run, name: str) -> Check:
    async def check() -> bool:
        return await run.shown("clusters", name) is None

    return check


def _row_holds(run: Run, table: str, name: str, expression: str) -> Check:
    """Whether ``expression`` (over the tenant's row ``name`` of ``table``) holds."""

    async def check() -> bool:
        async with run.database.sessionmaker() as session:
            holds = (
                await session.execute(
                    text(
                        f"SELECT {expression} FROM {table}"  # noqa: S608
                        " WHERE tenant_id = :tenant AND name = :name"
                    ),
                    {"tenant": run.tenant.id, "name": name},
                )
            ).scalar_one()
        return bool(holds)

    return check


def _observed(run: Run, table: str, name: str) -> Check:
    return _row_holds(run, table, name, "bool_or(observed_generation >= generation)")


def _row_gone(run: Run, table: str, name: str) -> Check:
    return _row_holds(run, table, name, "count(*) = 0")


async def deploy_and_run(
    fleet: Fleet,
    database: Database,
    tmp_path: Path,
    label: str,
    skews: tuple[str | None, str | None],
    rng: random.Random,
) -> Run:
    """Two APIs and two workers, the first of each at ``skews[0]`` and the second at
    ``skews[1]`` (None: the machine's clock), and the scenario through them."""
    url = database.engine.url.render_as_string(hide_password=False)
    (tmp_path / label).mkdir(exist_ok=True)
    env = topology_env(tmp_path / label, url, simulator_step_seconds="0.1")
    fleet.run(f"{label}-migrate", env, "migrate", "--json")

    def at(skew: str | None, **settings: str) -> dict[str, str]:
        return {**env, **(skewed_env(skew) if skew else {}), **settings}

    apis = [
        fleet.api(f"{label}-api-{index}", at(skew, TENANTPLANE_RUN_RECONCILERS="false"))
        for index, skew in enumerate(skews, start=1)
    ]
    workers = [
        fleet.worker(f"{label}-worker-{index}", at(skew))
        for index, skew in enumerate(skews, start=1)
    ]
    fleet.start(*apis, *workers)
    factory = Factory(database, TEST_SECRET.encode())
    run = Run(database, await factory.tenant(plan=Plan.enterprise), apis)
    try:
        await scenario(run, rng)
    finally:
        await run.close()
    for node in (*apis, *workers):
        node.stop()
    return run


async def test_clocks_ten_minutes_off_change_nothing_but_the_logs(
    postgres_url: str, fleet: Fleet, connections: Connections, figures: Figures, tmp_path: Path
) -> None:
    rng = seeded(figures)
    plain_database, _ = connections.open(postgres_url)
    baseline = await deploy_and_run(fleet, plain_database, tmp_path, "plain", (None, None), rng)
    with postgres_database(prefix="tenantplane_system") as skewed_url:
        database = Database.connect(skewed_url)
        try:
            skewed = await deploy_and_run(
                fleet, database, tmp_path, "skewed", ("+600s", "-600s"), rng
            )
            async with database.sessionmaker() as session:
                out_of_order = (await session.execute(text(_OUT_OF_ORDER))).scalar_one()
                history = (await session.execute(text(_HISTORY_ROWS))).scalar_one()
            await skewed.scan()
        finally:
            # Before the database is dropped.
            await database.dispose()

    for action, seconds in skewed.seconds.items():
        plain = baseline.seconds[action]
        figures[action] = (
            f"skewed p50 {statistics.median(seconds):.2f} s, max {max(seconds):.2f} s; "
            f"without skew p50 {statistics.median(plain):.2f} s, max {max(plain):.2f} s"
        )
    figures.update(
        history_rows=history,
        history_out_of_order=out_of_order,
        latest_stamp_ahead_of_the_database=f"{skewed.ahead.total_seconds():.3f} s "
        f"({skewed.ahead_what or 'none'})",
        baseline_latest_stamp_ahead=f"{baseline.ahead.total_seconds():.3f} s",
    )
    assert skewed.ahead <= FUTURE_SLACK, f"a stamp in the future: {skewed.ahead_what}"
    assert out_of_order == 0
    for action, seconds in skewed.seconds.items():
        assert max(seconds) < CONVERGE_BOUND_SECONDS, (action, seconds, baseline.seconds[action])
