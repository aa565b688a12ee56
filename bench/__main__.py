"""Load benchmarks of a real `tenantplane serve`, driven by wrk: `make bench`.

For each backend (SQLite and PostgreSQL) it starts the server as in production (logging on,
reconcilers in process unless stated), seeds data with the operator CLI and, for the big
scenarios, directly in the database, and prints per scenario: requests/s, p50, p99, the
server's CPU per request (from /proc/PID/stat before and after) and the ratio to /healthz
served by the same process in the same run. See bench/README.md.

    uv run python -m bench [--seconds 5] [--connections 64] [--backend sqlite|postgresql]
                           [--only abcdefghij] [--workers N] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import yaml
from sqlalchemy import Engine, func, select

from bench import scale, seed
from bench.load import Figures, run_wrk, settle
from bench.server import Process, Server, cli
from tenantplane.cluster.models import Cluster, ClusterHistory
from tenantplane.providers.orchestrator.simulator_models import SimulatedCluster

SCENARIOS = "abcdefghij"
POSTGRES_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
SERVER_NOTE = "uvicorn"


@dataclass
class Options:
    seconds: float
    connections: int
    scenarios: str
    workdir: Path
    #: API processes of every `serve` (`--workers`): 1 keeps figures comparable with earlier rounds.
    workers: int = 1
    #: Times the read scenarios run (`--rounds`), each round after a floor of its own.
    rounds: int = 1
    report: list[str] = field(default_factory=list)


@contextmanager
def database(backend: str, workdir: Path) -> Iterator[str]:
    """A new, empty database; dropped afterwards (PostgreSQL)."""
    if backend == "sqlite":
        path = workdir / f"bench-{uuid.uuid4().hex[:8]}.db"
        yield f"sqlite:///{path}"
        return
    name = f"tenantplane_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def environment(url: str, workdir: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "TENANTPLANE_DATABASE_URL": url,
        "TENANTPLANE_DATA_DIR": str(workdir),
        "TENANTPLANE_SECRET_KEY": "bench-secret-key-bench-secret-key",
        # The limiter still runs on every request; its limit is out of the way. A moving
        # window holds one entry per request in it: a one-second window holds about as many
        # as production's per-address default (1,200 a minute), where a minute of wrk's
        # load would hold 60,000 and measure list copies no deployment makes.
        "TENANTPLANE_RATE_LIMIT": "1000000/second",
        **{f"TENANTPLANE_{key.upper()}": value for key, value in extra.items()},
    }


@dataclass
class Tenant:
    name: str
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def path(self, rest: str) -> str:
        return f"/api/v1/tenants/{self.name}{rest}"


def create_tenant(env: dict[str, str], name: str, plan: str = "enterprise") -> Tenant:
    document = json.loads(cli(env, "tenant", "create", name, "--plan", plan, "--json"))
    return Tenant(document["tenant"]["name"], document["apiKey"]["key"])


def row(figures: Figures, baseline: Figures | None, note: str = "") -> str:
    ratio = f"{figures.rate / baseline.rate:.2f}" if baseline and baseline.rate else "-"
    others = f"{figures.others_cores:.2f}" + (" LOADED" if figures.loaded else "")
    return (
        f"| {figures.name} | {figures.rate:,.0f} | {figures.p50_ms:.1f} | {figures.p99_ms:.1f} "
        f"| {figures.cpu_ms_per_request:.2f} | {ratio} | {figures.errors} "
        f"| {figures.database_cores:.2f} | {others} | {note} |"
    )


HEADER = [
    "| scenario | req/s | p50 ms | p99 ms | CPU ms/req | ratio to (a) | errors "
    "| database's cores | others' cores | note |",
    "|---|---|---|---|---|---|---|---|---|---|",
]

#: A machine whose one-minute load average is above this before the run is not idle.
IDLE_LOAD_AVERAGE = 0.5


def emit(options: Options, line: str) -> None:
    print(line, flush=True)
    options.report.append(line)


def http_scenarios(backend: str, options: Options) -> None:
    """(a)-(f) against one server process; (d) again with the reconcilers in a worker."""
    wanted = options.scenarios
    with database(backend, options.workdir) as url:
        env = environment(url, options.workdir)
        cli(env, "migrate")
        tenant = create_tenant(env, f"bench-{uuid.uuid4().hex[:6]}")
        engine = seed.sync_engine(url)
        tenant_id = seed.tenant_id(engine, tenant.name)
        now = datetime.now(UTC)
        seed.seed_clusters(engine, [tenant_id], 50, now)
        seed.seed_invoices(engine, tenant_id, tenant.name, 120)
        log = options.workdir / f"server-{backend}.log"
        emit(
            options,
            f"\n### {backend}: one `tenantplane serve --workers {options.workers}` "
            f"({SERVER_NOTE}), wrk -t1\n",
        )
        emit(options, "\n".join(HEADER))
        server = Server(env, log, options.workers)
        try:
            server.wait_ready()
            drive = _driver(server, options)
            one = tenant.path("/clusters/cluster-000")
            # Warm-up: imports, caches, pooled connections.
            drive("warm-up", one, tenant.headers, seconds=1)
            reads = {
                "b": ("(b) GET one cluster", one),
                "c": ("(c) list 50 clusters", tenant.path("/clusters")),
                "e": ("(e) list 120 invoices", tenant.path("/invoices")),
            }
            ratios: dict[str, list[float]] = {letter: [] for letter in reads if letter in wanted}
            results: dict[str, Figures] = {}
            for _ in range(options.rounds):
                baseline = drive("(a) GET /healthz", "/healthz")
                emit(options, row(baseline, baseline))
                for letter, (name, path) in reads.items():
                    if letter not in wanted:
                        continue
                    results[letter] = drive(name, path, tenant.headers)
                    emit(options, row(results[letter], baseline))
                    ratios[letter].append(results[letter].rate / baseline.rate)
                    if letter == "b":
                        eight = drive(f"{name}, 8 conn", path, tenant.headers, connections=8)
                        emit(options, row(eight, baseline, "8 connections"))
            if "d" in wanted:
                created = drive(
                    "(d) create secret",
                    tenant.path("/secrets"),
                    tenant.headers,
                    post=tenant.path("/secrets"),
                    prefix="in",
                )
                emit(options, row(created, baseline, "reconcilers in process"))
        finally:
            server.stop()
        if options.rounds > 1:
            _median_ratios(options, ratios)
        if "d" in wanted:
            _writes_with_worker(env, options, tenant, log)
        if "f" in wanted:
            _big_database(env, options, engine, tenant, log, results.get("c"))
        engine.dispose()


def _median_ratios(options: Options, ratios: dict[str, list[float]]) -> None:
    """Each read scenario's ratio over the rounds: the floor of a shared machine moves by a
    fifth from one minute to the next, so each ratio is to the floor taken just before it
    and the median of the rounds is the figure."""
    emit(options, f"\n{options.rounds} rounds, each ratio to the (a) just before it:\n")
    emit(options, "| scenario | median ratio | lowest | highest |\n|---|---|---|---|")
    for letter, taken in ratios.items():
        emit(
            options,
            f"| ({letter}) | **{statistics.median(taken):.2f}** | {min(taken):.2f} "
            f"| {max(taken):.2f} |",
        )


def _driver(
    server: Server, options: Options, also: list[Process] | None = None
) -> Callable[..., Figures]:
    def drive(
        name: str,
        path: str,
        headers: dict[str, str] | None = None,
        *,
        seconds: float | None = None,
        connections: int | None = None,
        post: str | None = None,
        prefix: str = "b",
    ) -> Figures:
        return run_wrk(
            name,
            server,
            server.base + path,
            seconds=seconds or options.seconds,
            connections=connections or options.connections,
            headers=headers,
            post_path=post,
            prefix=prefix,
            also=also,
        )

    return drive


def _writes_with_worker(env: dict[str, str], options: Options, tenant: Tenant, log: Path) -> None:
    api_env = {**env, "TENANTPLANE_RUN_RECONCILERS": "false"}
    server = Server(api_env, log, options.workers)
    worker = Process(["worker"], env, options.workdir / "worker.log")
    try:
        server.wait_ready()
        drive = _driver(server, options, also=[worker])
        baseline = drive("(a) GET /healthz", "/healthz")
        created = drive(
            "(d) create secret",
            tenant.path("/secrets"),
            tenant.headers,
            post=tenant.path("/secrets"),
            prefix="wk",
        )
        api_cpu, worker_cpu = (
            1000 * seconds / created.requests for seconds in created.cpu_by_process
        )
        # The worker may trail the API: the time it needs to catch up once wrk stops, and
        # the CPU of that catching up, count against the rate.
        started = time.monotonic()
        worker_before = worker.cpu()
        settle([worker])
        catch_up = time.monotonic() - started
        trailing = 1000 * (worker.cpu() - worker_before) / created.requests
        note = (
            f"reconcilers in a `tenantplane worker`; CPU of both (API {api_cpu:.2f}, worker "
            f"{worker_cpu:.2f} + {trailing:.2f} catching up in {catch_up:.1f} s after wrk)"
        )
        emit(options, row(created, baseline, note))
    finally:
        server.stop()
        worker.stop()


def _big_database(
    env: dict[str, str],
    options: Options,
    engine: Engine,
    tenant: Tenant,
    log: Path,
    small: Figures | None,
) -> None:
    started = time.monotonic()
    now = datetime.now(UTC)
    others = seed.seed_tenants(engine, f"big-{uuid.uuid4().hex[:4]}", 1000, now)
    seed.seed_clusters(engine, others, 100, now)
    seeded = time.monotonic() - started
    server = Server(env, log, options.workers)
    try:
        server.wait_ready()
        drive = _driver(server, options)
        drive("warm-up", tenant.path("/clusters"), tenant.headers, seconds=1)
        baseline = drive("(a) GET /healthz", "/healthz")
        big = drive("(f) list 50 clusters, big db", tenant.path("/clusters"), tenant.headers)
        note = f"1,000 more tenants x 100 clusters (seeded in {seeded:.0f} s)"
        if small is not None and big.rate:
            note += f"; (c)/(f) = {small.rate / big.rate:.2f}"
        emit(options, row(big, baseline, note))
    finally:
        server.stop()


def billing_run(backend: str, options: Options) -> None:
    """(g) `tenantplane billing run` closing one period for each of 10,000 tenants."""
    with database(backend, options.workdir) as url:
        env = environment(url, options.workdir)
        cli(env, "migrate")
        engine = seed.sync_engine(url)
        now = datetime.now(UTC)
        start = now - timedelta(days=40)
        tenants = seed.seed_tenants(engine, "bill", 10_000, start)
        clusters = seed.seed_clusters(engine, tenants, 1, start)
        seed.seed_history(engine, clusters, start)
        engine.dispose()
        began = time.monotonic()
        outcome = json.loads(cli(env, "billing", "run", "--json"))
        took = time.monotonic() - began
        issued = len(outcome.get("issued", []))
        emit(
            options,
            f"\n(g) {backend}: billing run for 10,000 tenants: {took:.1f} s, "
            f"{issued} invoices issued (target < 60 s)",
        )


def events_at_scale(backend: str, options: Options) -> None:
    """(i) a filtered page of events with 10,000, then 10 million events in the table
    (PostgreSQL)."""
    if backend != "postgresql":
        emit(options, f"\n(i) {backend}: not run (10 million rows: PostgreSQL only)")
        return
    with database(backend, options.workdir) as url:
        env = environment(url, options.workdir)
        cli(env, "migrate")
        tenant = create_tenant(env, f"events-{uuid.uuid4().hex[:6]}")
        engine = seed.sync_engine(url)
        emit(options, f"\n### {backend}: (i) the event list as the table grows\n")
        emit(options, "\n".join(HEADER))
        try:
            scale.event_list(
                engine,
                env,
                options,
                tenant,
                lambda line: emit(options, line),
                lambda server: _driver(server, options),
                row,
            )
        finally:
            engine.dispose()


def billing_memory(backend: str, options: Options) -> None:
    """(j) `tenantplane billing run` for 10,000 and 100,000 tenants: time and peak RSS."""
    if backend != "postgresql":
        emit(options, f"\n(j) {backend}: not run (PostgreSQL only)")
        return
    for tenants in (10_000, 100_000):
        with database(backend, options.workdir) as url:
            env = environment(url, options.workdir)
            cli(env, "migrate")
            took, cpu, issued, peak = scale.billing_at_scale(url, env, tenants)
        emit(
            options,
            f"\n(j) {backend}: billing run for {tenants:,} tenants: {took:.1f} s (its CPU "
            f"{cpu:.1f} s), {issued} invoices issued, peak RSS {peak / 1024:.0f} MiB "
            "(target < 120 s at 100,000; peak RSS not growing with the tenants)",
        )


def simultaneous_creations(backend: str, options: Options, count: int = 1000) -> None:
    """(h) ``count`` cluster creations at once (simulator step 0.2 s) until all are Running:
    once with the reconcilers in the API process, once with them in a `tenantplane worker`."""
    for in_worker in (False, True):
        _burst(backend, options, count, in_worker=in_worker)


def _burst(backend: str, options: Options, count: int, *, in_worker: bool) -> None:
    step = 0.2
    where = "worker" if in_worker else "in process"
    with database(backend, options.workdir) as url:
        plans = options.workdir / "plans.yaml"
        catalogue = yaml.safe_load(
            (Path(__file__).parents[1] / "src/tenantplane/catalogue/plans.yaml").read_text()
        )
        catalogue["plans"]["enterprise"]["limits"]["clusters"] = count
        plans.write_text(yaml.safe_dump(catalogue))
        env = environment(
            url, options.workdir, simulator_step_seconds=str(step), plans_file=str(plans)
        )
        cli(env, "migrate")
        tenant = create_tenant(env, f"burst-{uuid.uuid4().hex[:6]}")
        log = options.workdir / f"server-{backend}-burst-{where.replace(' ', '-')}.log"
        api_env = {**env, "TENANTPLANE_RUN_RECONCILERS": "false"} if in_worker else env
        server = Server(api_env, log, options.workers)
        worker = Process(["worker"], env, log.with_suffix(".worker.log")) if in_worker else None
        engine = seed.sync_engine(url)
        try:
            server.wait_ready()
            cpu_before = server.cpu() + (worker.cpu() if worker else 0.0)
            fired, accepted, statuses, client_cpu = _fire_burst(server.base, tenant, count)
            accepted_count = statuses.get(201, 0)
            while True:
                with engine.connect() as connection:
                    running = connection.execute(
                        select(func.count()).where(Cluster.phase == "Running")
                    ).scalar_one()
                if running >= accepted_count or time.time() - fired.timestamp() > 300:
                    break
                time.sleep(0.05)
            total = time.time() - fired.timestamp()
            cpu = server.cpu() + (worker.cpu() if worker else 0.0) - cpu_before
            with engine.connect() as connection:
                rows = connection.execute(
                    select(ClusterHistory.cluster_uid, ClusterHistory.phase, ClusterHistory.at)
                ).all()
                provisioned: dict[str, datetime] = dict(
                    connection.execute(
                        select(SimulatedCluster.uid, SimulatedCluster.created_at)
                    ).all()
                )
        finally:
            server.stop()
            if worker is not None:
                worker.stop()
            engine.dispose()
        answers = ", ".join(f"{n} x {code}" for code, n in sorted(statuses.items()))
        emit(
            options,
            f"\n(h) {backend}, reconcilers {where} ({_burst_target(backend, in_worker)}): "
            f"answers {answers}; accepted in "
            f"{accepted:.1f} s, all Running after {total:.1f} s, CPU {cpu:.1f} s (the burst's "
            f"client {client_cpu:.1f} s); "
            + _burst_latencies(rows, provisioned, fired, simulated=2 * step),
        )


def _burst_target(backend: str, in_worker: bool) -> str:
    """Whether this run is the backend's deployment shape, which (h)'s target is about: the
    reconcilers in the API process on SQLite (one writer process: a worker's writes wait in
    SQLite's busy handler behind the API's), in a `tenantplane worker` on PostgreSQL (the
    scale-out shape, as (d) measures it). The other shape is printed for comparison."""
    if in_worker == (backend == "postgresql"):
        return "the deployment shape: target overhead < 10 %"
    return "for comparison, not the deployment shape"


def _burst_latencies(
    rows: Sequence[Any],
    provisioned: dict[str, datetime],
    fired: datetime,
    *,
    simulated: float,
) -> str:
    """create→Running per cluster against the simulated steps (a non-HA cluster: etcd, then
    the control plane), and where the time went: the burst's start → the cluster's creation
    (acceptance), creation → the orchestrator's first call (queue wait before the first
    step), first call → Running (the simulated steps and the reconciler's own overhead)."""
    created: dict[str, datetime] = {}
    ready: dict[str, datetime] = {}
    for uid, phase, at in rows:
        if phase == "Pending":
            created.setdefault(uid, _utc(at))
        if phase == "Running":
            ready.setdefault(uid, _utc(at))
    done = [uid for uid in ready if uid in created and uid in provisioned]
    if not done:
        return "no cluster reached Running"

    def spread(values: list[float]) -> str:
        values.sort()
        return (
            f"p50 {statistics.median(values):.3f} s, "
            f"p99 {values[int(0.99 * (len(values) - 1))]:.3f} s"
        )

    latencies = [(ready[u] - created[u]).total_seconds() for u in done]
    accepting = [(created[u] - fired).total_seconds() for u in done]
    waiting = [(_utc(provisioned[u]) - created[u]).total_seconds() for u in done]
    stepping = [(ready[u] - _utc(provisioned[u])).total_seconds() for u in done]
    median = statistics.median(latencies)
    overhead = (median - simulated) / simulated
    return (
        f"create→Running {spread(latencies)} against {simulated:.1f} s simulated: "
        f"overhead {overhead:.1%} (median). Decomposed: accepted after the burst's start "
        f"{spread(accepting)}; queue wait before the first step {spread(waiting)}; "
        f"first step → Running {spread(stepping)}"
    )


def _utc(value: datetime) -> datetime:
    # SQLite returns naive datetimes (they are UTC).
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _fire_burst(
    base: str, tenant: Tenant, count: int
) -> tuple[datetime, float, Counter[int], float]:
    """``count`` cluster creations at once from a `bench.burst` process: when they were
    fired, the seconds until the last answer, the answers' status codes and the client's
    CPU seconds."""
    command = [sys.executable, "-m", "bench.burst", "--url", base, "--key", tenant.key]
    command += ["--path", tenant.path("/clusters"), "--count", str(count)]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    result = json.loads(output)
    statuses = Counter({int(code): n for code, n in result["statuses"].items()})
    fired = datetime.fromtimestamp(result["fired"], UTC)
    return fired, float(result["seconds"]), statuses, float(result["cpu_seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="per wrk scenario")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--only", default=SCENARIOS, help="scenario letters, e.g. abc")
    parser.add_argument("--output", type=Path, help="also write the tables to this file")
    parser.add_argument("--keep", action="store_true", help="keep the logs and SQLite files")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="API processes of each `tenantplane serve` (its --workers; CPU is all of theirs)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run (a), (b), (c) and (e) this many times and print each read's median ratio",
    )
    parser.add_argument(
        "--loaded-ok",
        action="store_true",
        help=f"run even if the load average is above {IDLE_LOAD_AVERAGE} (figures flagged)",
    )
    arguments = parser.parse_args()
    load_average = os.getloadavg()[0]
    if load_average > IDLE_LOAD_AVERAGE and not arguments.loaded_ok:
        raise SystemExit(
            f"the machine is not idle (load average {load_average:.2f} > {IDLE_LOAD_AVERAGE}): "
            "ratios taken now are not comparable; wait, or pass --loaded-ok"
        )
    workdir = Path(tempfile.mkdtemp(prefix="tenantplane-bench-"))
    if arguments.workers < 1 or arguments.rounds < 1:
        parser.error("--workers and --rounds must be at least 1")
    options = Options(
        arguments.seconds,
        arguments.connections,
        arguments.only,
        workdir,
        arguments.workers,
        rounds=arguments.rounds,
    )
    backends = ["sqlite", "postgresql"] if arguments.backend == "both" else [arguments.backend]
    emit(
        options,
        f"tenantplane bench {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"{os.cpu_count()} CPUs, wrk -c{options.connections} {options.seconds:.0f} s per scenario, "
        f"serve --workers {options.workers}, load average {load_average:.2f} before the run",
    )
    try:
        for backend in backends:
            if set(options.scenarios) & set("abcdef"):
                http_scenarios(backend, options)
            if "g" in options.scenarios:
                billing_run(backend, options)
            if "h" in options.scenarios:
                simultaneous_creations(backend, options)
            if "i" in options.scenarios:
                events_at_scale(backend, options)
            if "j" in options.scenarios:
                billing_memory(backend, options)
    finally:
        if arguments.output:
            arguments.output.write_text("\n".join(options.report) + "\n")
        if arguments.keep:
            print(f"logs and files kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
