"""Processes SIGKILLed at random moments under a write load lose no acknowledged write.

Writers create and resize clusters and create and retarget secrets through the APIs while
API and worker processes are SIGKILLed at random moments (four kills on PostgreSQL, three on
SQLite; a seeded schedule: the seed is printed and ``TENANTPLANE_TEST_SEED`` replays it) and
restarted at once; the writers stop once every killed process serves again. Afterwards
every write that was answered with a 2xx is present (or superseded by a later attempt of
the same writer whose answer was lost), and every resource converges: clusters Running with
the size asked for, secrets Synced to the namespace asked for.

PostgreSQL: two APIs, two workers and Redis. SQLite: the embedded database shared by one
API (no reconcilers) and one worker, which is what a SQLite file supports (one writer at a
time across processes, no LISTEN/NOTIFY: the worker polls).
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tenantplane.tenant.models import Plan
from tests.factories import TenantFixture
from tests.http_client import bearer
from tests.system.conftest import Connections, Figures
from tests.system.harness import (
    Deployment,
    Fleet,
    Node,
    client_of,
    deployment_env,
    eventually,
    sqlite_url,
    system_redis_url,
)

pytestmark = pytest.mark.system

CONVERGE_SECONDS = 180.0
WRITERS_PER_TENANT = 4
REQUEST_TIMEOUT_SECONDS = 60.0
CONNECT_BACKOFF_SECONDS = 0.2

ACKED, REFUSED, UNKNOWN = "acknowledged", "refused", "unknown"


@dataclass
class Attempt:
    value: str
    outcome: str


@dataclass
class Resource:
    """A cluster (its cpu) or a secret (its target namespace) and every write attempted on
    it, in order (one writer owns it, so the order is the order of the requests)."""

    kind: str
    tenant: TenantFixture
    name: str
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def exists(self) -> bool:
        """Known to exist: a write to it was acknowledged (a create, or a 409 on one)."""
        return any(attempt.outcome == ACKED for attempt in self.attempts)

    def allowed(self) -> set[str]:
        """Values it may hold: the last acknowledged one, or one of the later attempts whose
        answer was lost (the server may have applied them)."""
        last = max(
            (index for index, a in enumerate(self.attempts) if a.outcome == ACKED), default=-1
        )
        later = {a.value for a in self.attempts[last + 1 :] if a.outcome == UNKNOWN}
        return later | ({self.attempts[last].value} if last >= 0 else set())


@dataclass
class Load:
    apis: list[Node]
    rng: random.Random
    clients: dict[str, httpx.AsyncClient]
    outcomes: Counter[str] = field(default_factory=Counter)
    # Why answers were refused or lost: the error, or the status of an error answer.
    causes: Counter[str] = field(default_factory=Counter)

    async def send(self, method: str, path: str, body: dict[str, Any], key: str) -> str:
        """One request to a random API: acknowledged (2xx), refused (an error answer, or
        the connection was refused), or unknown (the answer was lost)."""
        api = self.rng.choice(self.apis)
        try:
            response = await self.clients[api.name].request(
                method, f"/api/v1{path}", json=body, headers=bearer(key)
            )
        except httpx.ConnectError as error:
            self.causes[type(error).__name__] += 1
            outcome = REFUSED
            # The API is down (killed, restarting): back off as a client would.
            await asyncio.sleep(CONNECT_BACKOFF_SECONDS)
        except httpx.TransportError as error:
            self.causes[type(error).__name__] += 1
            outcome = UNKNOWN
        else:
            if response.status_code >= 500:
                self.causes[f"{response.status_code} {response.text[:120]}"] += 1
                outcome = UNKNOWN
            elif response.status_code == 409 and method == "POST":
                # An earlier create whose answer was lost did happen.
                outcome = "exists"
            else:
                # Writers send valid requests only: any other refusal is a defect.
                assert response.is_success, f"{method} {path}: {response.text}"
                outcome = ACKED
        self.outcomes[outcome] += 1
        return outcome


async def write(
    load: Load, resource: Resource, method: str, path: str, body: dict[str, Any], value: str
) -> str:
    outcome = await load.send(method, path, body, resource.tenant.admin_key)
    resource.attempts.append(Attempt(value, ACKED if outcome == "exists" else outcome))
    return outcome


async def writer(
    load: Load, tenant: TenantFixture, index: int, stop: asyncio.Event
) -> tuple[Resource, Resource]:
    """Creates cluster c-{index} and secret s-{index} (retrying until they are known to
    exist), then resizes the cluster and retargets the secret, turn about, until ``stop``."""
    cluster = Resource("cluster", tenant, f"c-{index}")
    secret = Resource("secret", tenant, f"s-{index}")
    base = f"{tenant.path}/clusters"
    step = 0

    def cpu() -> str:
        return f"{1000 + step}m"

    def target() -> list[dict[str, str]]:
        return [{"cluster": cluster.name, "namespace": f"n{step}"}]

    while not cluster.exists:
        created: dict[str, Any] = {"name": cluster.name, "resources": {"cpu": cpu()}}
        await write(load, cluster, "POST", base, created, cpu())
    while not secret.exists:
        created = {"name": secret.name, "secretPath": f"apps/{secret.name}", "sync": target()}
        await write(load, secret, "POST", f"{tenant.path}/secrets", created, f"n{step}")
    while not stop.is_set():
        step += 1
        resize = {"resources": {"cpu": cpu()}}
        await write(load, cluster, "PATCH", f"{base}/{cluster.name}", resize, cpu())
        path = f"{tenant.path}/secrets/{secret.name}"
        await write(load, secret, "PATCH", path, {"sync": target()}, f"n{step}")
    return cluster, secret


@dataclass
class Chaos:
    """SIGKILLs processes at random moments and restarts each at once (in a thread: a
    restart takes seconds), keeping ``keep_apis`` APIs running."""

    deployment: Deployment
    rng: random.Random
    keep_apis: int
    kills: Counter[str] = field(default_factory=Counter)
    restarts: dict[str, asyncio.Task[None]] = field(default_factory=dict)

    def ready(self, node: Node) -> bool:
        """Running and not in the middle of a restart (killing a process that is still
        starting proves nothing more and only slows the test down)."""
        restart = self.restarts.get(node.name)
        return node.alive and (restart is None or restart.done())

    async def run(self, kills: int) -> None:
        """``kills`` SIGKILLs, each at a random moment, then every process running again."""
        for _ in range(kills):
            # The schedule of the kills (not a wait for anything): a random moment each.
            await asyncio.sleep(self.rng.uniform(1.0, 3.0))
            victim = await eventually(self.pick, "a running process to kill", CONVERGE_SECONDS)
            victim.kill()
            self.kills["api" if victim in self.deployment.apis else "worker"] += 1
            self.restarts[victim.name] = asyncio.create_task(asyncio.to_thread(victim.restart))
        await asyncio.gather(*self.restarts.values())

    async def pick(self) -> Node | None:
        running_apis = [api for api in self.deployment.apis if self.ready(api)]
        candidates = [node for node in self.deployment.workers if self.ready(node)]
        if len(running_apis) > self.keep_apis:
            candidates += running_apis
        return self.rng.choice(candidates) if candidates else None


async def converged(client: httpx.AsyncClient, resources: list[Resource]) -> bool:
    """True once every resource holds an allowed value and has converged; fails at once
    when an acknowledged write is missing (a lost write does not come back later)."""
    listed: dict[tuple[str, str, str], dict[str, Any]] = {}
    for tenant in {resource.tenant.name: resource.tenant for resource in resources}.values():
        for kind, path in (("cluster", "clusters"), ("secret", "secrets")):
            response = await client.get(
                f"/api/v1{tenant.path}/{path}", headers=bearer(tenant.admin_key)
            )
            assert response.status_code == 200, response.text
            for item in response.json()["items"]:
                listed[(kind, tenant.name, item["name"])] = item
    done = True
    for resource in resources:
        item = listed.get((resource.kind, resource.tenant.name, resource.name))
        if item is None:
            assert not resource.exists, f"acknowledged {resource.kind} {resource.name} is lost"
            continue
        value = (
            item["resources"]["cpu"] if resource.kind == "cluster" else item["sync"][0]["namespace"]
        )
        assert value in resource.allowed(), (
            f"{resource.kind} {resource.name} holds {value}, not an acknowledged write "
            f"{sorted(resource.allowed())}: {resource.attempts}"
        )
        done = done and settled(resource.kind, item)
    return done


def settled(kind: str, item: dict[str, Any]) -> bool:
    status = item["status"]
    if kind == "cluster":
        observed = status["metrics"].get("allocatable", {}).get("cpu")
        return bool(status["phase"] == "Running" and observed == item["resources"]["cpu"])
    targets = {target["namespace"] for target in item["sync"]}
    synced = {entry["namespace"] for entry in status["syncStatuses"] if entry["phase"] == "Synced"}
    return bool(status["phase"] == "Synced" and synced == targets)


async def postgres_deployment(fleet: Fleet, tmp_path: Path, url: str) -> tuple[Deployment, int]:
    env = crash_env(tmp_path, url, redis_url=system_redis_url())
    return fleet.deploy(env, apis=2, workers=2), 1


async def sqlite_deployment(fleet: Fleet, tmp_path: Path, url: str) -> tuple[Deployment, int]:
    return fleet.deploy(crash_env(tmp_path, url), apis=1, workers=1), 0


def crash_env(tmp_path: Path, url: str, **settings: str) -> dict[str, str]:
    return deployment_env(
        tmp_path,
        url,
        simulator_step_seconds="0.1",
        # A killed worker's leases lapse soon, so the restarted one takes over quickly.
        reconcile_lease_seconds="2",
        reconcile_idle_poll_seconds="0.3",
        secret_retry_seconds="0.5",
        **settings,
    )


@pytest.mark.parametrize("backend", ["postgresql", "sqlite"])
async def test_sigkills_under_write_load_lose_no_acknowledged_write(
    backend: str,
    fleet: Fleet,
    connections: Connections,
    figures: Figures,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    seed = int(os.environ.get("TENANTPLANE_TEST_SEED") or secrets.randbelow(2**32))
    figures["seed"] = seed  # printed even when the test fails: the run can be replayed
    if backend == "postgresql":
        url = request.getfixturevalue("postgres_url")
        deployment, keep_apis = await postgres_deployment(fleet, tmp_path, url)
        kills = 4
    else:
        url = sqlite_url(tmp_path / "data")
        deployment, keep_apis = await sqlite_deployment(fleet, tmp_path, url)
        kills = 3
    _, factory = connections.open(url)
    tenants = [await factory.tenant(plan=Plan.enterprise) for _ in range(2)]

    clients = {api.name: client_of(api, REQUEST_TIMEOUT_SECONDS) for api in deployment.apis}
    load = Load(deployment.apis, random.Random(seed + 1), clients)
    chaos = Chaos(deployment, random.Random(seed), keep_apis)
    stop = asyncio.Event()
    load_started = time.monotonic()
    try:
        writers = asyncio.gather(
            *(
                writer(load, tenant, index, stop)
                for tenant in tenants
                for index in range(WRITERS_PER_TENANT)
            )
        )
        await chaos.run(kills)
        stop.set()
        pairs = await writers
        resources = [resource for pair in pairs for resource in pair]
        started = time.monotonic()
        await eventually(
            lambda: converged(clients[deployment.apis[0].name], resources),
            "every resource to converge after the kills",
            CONVERGE_SECONDS,
            interval=0.5,
        )
        convergence = time.monotonic() - started
    finally:
        stop.set()
        await asyncio.gather(writers, return_exceptions=True)
        for client in clients.values():
            await client.aclose()
        figures.update(
            requests=sum(load.outcomes.values()),
            answers=dict(load.outcomes),
            errors=dict(load.causes),
            kills=dict(chaos.kills),
            load_seconds=round(time.monotonic() - load_started, 1),
        )
    writes = [attempt for resource in resources for attempt in resource.attempts]
    figures.update(
        writes_acknowledged=sum(attempt.outcome == ACKED for attempt in writes),
        resources_acknowledged=sum(resource.exists for resource in resources),
        resources_found_with_an_acknowledged_state=len(resources),
        seconds_to_converge_after_the_load=round(convergence, 1),
    )
    assert sum(chaos.kills.values()) > 0
    assert all(resource.exists for resource in resources), "a writer never got a create through"
