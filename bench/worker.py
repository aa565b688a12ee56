"""The secret reconciler's CPU per new secret, in process, without HTTP.

`uv run python -m bench.worker [--backend postgresql|sqlite] [--secrets 1000] [--rate 500]`

Two figures, the CPU time of this process (all threads) divided by the secrets reconciled:

- **backlog**: N pending secrets inserted directly, then ``ReconcilerRunner.run_once``
  (rows leased a batch at a time, as a worker catching up does);
- **trickle** (PostgreSQL): the runner's real loop with the LISTEN connection, while a
  producer in another process inserts one secret per transaction at ``--rate`` per second,
  each with its NOTIFY in the INSERT as the API sends it (the wake-ups a `tenantplane worker`
  sees under scenario (d)).

The producer's CPU is not counted (another process). This figure moves far less than the
bench's (d) worker row on a shared machine; it leaves out the worker's logging to a file.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import seed
from bench.__main__ import database, environment
from bench.server import cli

PRODUCER = r"""
import json, sys, time, uuid
import psycopg
url, tenant_id, count, rate, conditions = sys.argv[1:6]
count, rate = int(count), float(rate)
with psycopg.connect(url, autocommit=True) as connection:
    started = time.monotonic()
    for index in range(count):
        due = started + index / rate
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        connection.execute(
            "INSERT INTO secrets (uid, tenant_id, name, created_at, secret_path, sync, generation,"
            " phase, observed_generation, sync_statuses, conditions, applied, resource_version,"
            " reconcile_at) VALUES (%s, %s, %s, now(), %s, '[]', 1, 'Pending', 0, '[]', %s, '[]',"
            " 1, now()) RETURNING pg_notify('tenantplane_reconcile', 'secrets')",
            (uuid.uuid4().hex, int(tenant_id), f"t-{index}", f"apps/t-{index}", conditions),
        )
"""


def _secret_rows(tenant_id: int, prefix: str, count: int) -> list[dict[str, Any]]:
    from tenantplane.secret.models import SyncPhase
    from tenantplane.secret.status import initial_conditions

    now = datetime.now(UTC)
    return [
        {
            "uid": uuid.uuid4().hex,
            "tenant_id": tenant_id,
            "name": f"{prefix}-{index}",
            "created_at": now,
            "secret_path": f"apps/{prefix}-{index}",
            "sync": [],
            "generation": 1,
            "phase": SyncPhase.pending.value,
            "observed_generation": 0,
            "sync_statuses": [],
            "conditions": initial_conditions(1, now),
            "applied": [],
            "resource_version": 1,
            "reconcile_at": now,
        }
        for index in range(count)
    ]


def _runner(url: str) -> Any:
    from tenantplane.config import Settings
    from tenantplane.db.engine import Database, DatabaseOptions
    from tenantplane.reconcile.registry import ReconcileContext
    from tenantplane.reconcile.runner import ReconcilerRunner
    from tenantplane.secret.reconciler import build_secret_reconciler

    settings = Settings()
    database = Database.connect(url, DatabaseOptions.from_settings(settings))
    context = ReconcileContext(settings, database)
    reconciler = build_secret_reconciler(context)
    assert reconciler is not None
    if "BENCH_COALESCE_SECONDS" in os.environ:
        reconciler.coalesce_seconds = float(os.environ["BENCH_COALESCE_SECONDS"])
    return database, context, ReconcilerRunner(database, reconciler, idle_poll_seconds=2.0)


def _steps(runner: Any) -> float:
    return float(runner.metrics.steps.labels(runner.reconciler.name)._value.get())


async def _backlog(url: str, engine: Any, tenant_id: int, count: int) -> float:
    from tenantplane.secret.models import Secret

    database, context, runner = _runner(url)
    try:
        seed._insert(engine, Secret.__table__, _secret_rows(tenant_id, "warm", 100))
        await runner.run_once()  # warm-up: statements compiled, pool filled
        seed._insert(engine, Secret.__table__, _secret_rows(tenant_id, "backlog", count))
        started = time.process_time()
        worked = await runner.run_once()
        cpu = time.process_time() - started
        assert worked == count, (worked, count)
        return cpu / count
    finally:
        await context.aclose()
        await database.dispose()


def _count_fetches(runner: Any) -> list[int]:
    """[fetches that found rows, rows found, fetches that found none, next-due queries],
    from now on."""
    counts = [0, 0, 0, 0]
    lease = runner.fetcher.lease
    due = runner.fetcher.seconds_until_due

    async def counting_due() -> Any:
        counts[3] += 1
        return await due()

    async def counting(limit: int, duration: Any) -> Any:
        leases = await lease(limit, duration)
        if leases:
            counts[0] += 1
            counts[1] += len(leases)
        else:
            counts[2] += 1
        return leases

    runner.fetcher.lease = counting
    runner.fetcher.seconds_until_due = counting_due
    return counts


async def _trickle(
    url: str, tenant_id: int, count: int, rate: float
) -> tuple[float, float, float, list[int]]:
    import json

    from tenantplane.db.urls import libpq_dsn
    from tenantplane.reconcile.hints import wakeups
    from tenantplane.reconcile.listener import listen
    from tenantplane.secret.status import initial_conditions

    database, context, runner = _runner(url)
    fetches = _count_fetches(runner)
    ready = asyncio.Event()
    listener = asyncio.create_task(listen(url, wakeups.wake, ready))
    running = asyncio.create_task(runner.run())
    await ready.wait()
    conditions = json.dumps(initial_conditions(1, datetime.now(UTC)), default=str)
    try:
        for phase_count in (min(200, count), count):  # warm-up, then measured
            fetches[:] = [0, 0, 0, 0]
            before = _steps(runner)
            started_cpu = time.process_time()
            started = time.monotonic()
            producer = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                PRODUCER,
                libpq_dsn(url),
                str(tenant_id),
                str(phase_count),
                str(rate),
                conditions,
            )
            first: float | None = None
            while (done := _steps(runner) - before) < phase_count:
                await asyncio.sleep(0.01)
                if first is None and done:
                    first = time.monotonic()  # the producer is up (its start is not counted)
                if producer.returncode not in (None, 0):
                    raise RuntimeError("producer failed")
            elapsed = time.monotonic() - (first or started)
            cpu = time.process_time() - started_cpu
            await producer.wait()
            # Names restart per phase: clear the rows of the warm-up.
            async with database.transaction() as session:
                from sqlalchemy import delete

                from tenantplane.secret.models import Secret

                await session.execute(delete(Secret).where(Secret.name.like("t-%")))
        return cpu / count, count / elapsed, fetches[1] / max(fetches[0], 1), fetches[2:]
    finally:
        runner.stop()
        await running
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)
        await context.aclose()
        await database.dispose()


def _profiled(coroutine: Any, profile: bool) -> Any:
    if not profile:
        return asyncio.run(coroutine)
    import cProfile
    import pstats

    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    try:
        return asyncio.run(coroutine)
    finally:
        profiler.disable()
        stats = pstats.Stats(profiler)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(60)


def run(backend: str, count: int, rate: float, modes: str, profile: bool = False) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="tenantplane-bench-worker-"))
    with database(backend, workdir) as url:
        env = environment(url, workdir, run_reconcilers="false", log_level="WARNING")
        cli(env, "migrate")
        os.environ.update(
            {key: value for key, value in env.items() if key.startswith("TENANTPLANE_")}
        )
        from tenantplane.logging import configure_logging

        configure_logging("WARNING", False)
        engine = seed.sync_engine(url)
        (tenant_id,) = seed.seed_tenants(engine, "bench", 1, datetime.now(UTC))
        print(f"\n### {backend}: secret reconciler in process, {count} new secrets\n")
        print("| mode | worker CPU µs/secret | note |\n|---|---|---|")
        if "backlog" in modes:
            cpu = _profiled(_backlog(url, engine, tenant_id, count), profile)
            print(f"| backlog (run_once) | {cpu * 1e6:,.0f} | |", flush=True)
        if "trickle" in modes and backend == "postgresql":
            cpu, achieved, per_fetch, (empty, due) = _profiled(
                _trickle(url, tenant_id, count, rate), profile
            )
            print(
                f"| trickle at {rate:g}/s (run loop, NOTIFY per insert) | {cpu * 1e6:,.0f} "
                f"| {achieved:,.0f} secrets/s reconciled, {per_fetch:.1f} rows per fetch, "
                f"{empty} fetches found none, {due} next-due queries |",
                flush=True,
            )
        engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.worker", description=__doc__)
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="postgresql")
    parser.add_argument("--secrets", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--modes", default="backlog,trickle")
    parser.add_argument("--profile", action="store_true", help="cProfile (CPU time) the runs")
    arguments = parser.parse_args()
    run(arguments.backend, arguments.secrets, arguments.rate, arguments.modes, arguments.profile)


if __name__ == "__main__":
    main()
