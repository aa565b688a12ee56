"""The application's own CPU per request, without HTTP or a load generator.

`uv run python -m bench.inprocess [--backend sqlite|postgresql|both] [--requests 1000]
[--profile LETTER]`

Builds the app in this process (reconcilers off, logging at WARNING), seeds the same data as
scenarios (b), (c) and (e), and calls it as an ASGI server would, one request after another
((d): a POST of a new secret each time): the CPU time per request (all threads of this
process) is what the application itself costs, route by route, against `/healthz` in the
same run. On a shared machine this figure moves far less than wrk's rates; it leaves out the
HTTP server's own cost (the same for every route).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import itertools
import os
import pstats
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import seed
from bench.__main__ import create_tenant, database, environment
from bench.server import cli

Headers = list[tuple[bytes, bytes]]
Route = tuple[str, Headers, bool]  # path, headers, POST a new secret


def _new_secret(counter: itertools.count[int]) -> bytes:
    name = f"inproc-{next(counter)}"
    return f'{{"name":"{name}","secretPath":"apps/{name}"}}'.encode()


async def _call(
    app: Any, path: str, headers: list[tuple[bytes, bytes]], body: bytes | None = None
) -> None:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body or b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET" if body is None else "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"bench"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
        "state": {},
    }
    await app(scope, receive, send)
    if sent[0]["status"] != (200 if body is None else 201):
        raise RuntimeError(f"{path} answered {sent[0]['status']}")


async def _measure(
    paths: dict[str, Route], count: int, profile: str | None, concurrency: int = 1
) -> None:
    from tenantplane.app import create_app

    app = create_app()
    names = itertools.count()
    async with app.router.lifespan_context(app):
        baseline = 0.0
        for name, (path, headers, creates) in paths.items():
            for _ in range(50):  # warm-up: routes built, statements compiled, caches filled
                await _call(app, path, headers, _new_secret(names) if creates else None)
            profiler = _profiler(name, profile)
            started = time.process_time()

            async def caller(share: int, path: str, headers: Headers, creates: bool) -> None:
                for _ in range(share):
                    await _call(app, path, headers, _new_secret(names) if creates else None)

            # Creates one at a time: many at once would queue for the one writer and be refused.
            tasks = 1 if creates else concurrency
            shares = [count // tasks + (i < count % tasks) for i in range(tasks)]
            await asyncio.gather(*(caller(share, path, headers, creates) for share in shares))
            cpu = (time.process_time() - started) / count
            if profiler is not None:
                profiler.disable()
                _print_profile(profiler)
            baseline = baseline or cpu
            print(f"| {name} | {cpu * 1e6:,.0f} | {cpu / baseline:.1f} |", flush=True)


def _print_profile(profiler: cProfile.Profile) -> None:
    # Coroutines count once per resumption: compare cumulative times, not call counts.
    for order in ("tottime", "cumulative"):
        pstats.Stats(profiler).sort_stats(order).print_stats(40)


def _profiler(name: str, profile: str | None) -> cProfile.Profile | None:
    """A CPU-clock profile of the scenario whose letter ``profile`` names, if any."""
    if profile is None or not name.startswith(f"({profile})"):
        return None
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    return profiler


def run(
    backend: str,
    count: int,
    profile: str | None = None,
    concurrency: int = 1,
    only: str = "abced",
) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="tenantplane-inprocess-"))
    with database(backend, workdir) as url:
        env = environment(url, workdir, run_reconcilers="false", log_level="WARNING")
        cli(env, "migrate")
        tenant = create_tenant(env, f"bench-{uuid.uuid4().hex[:6]}")
        engine = seed.sync_engine(url)
        tenant_id = seed.tenant_id(engine, tenant.name)
        seed.seed_clusters(engine, [tenant_id], 50, datetime.now(UTC))
        seed.seed_invoices(engine, tenant_id, tenant.name, 120)
        engine.dispose()
        os.environ.update(
            {key: value for key, value in env.items() if key.startswith("TENANTPLANE_")}
        )
        auth = [(b"authorization", f"Bearer {tenant.key}".encode())]
        posting = [*auth, (b"content-type", b"application/json")]
        paths: dict[str, Route] = {
            "(a) GET /healthz": ("/healthz", [], False),
            "(b) GET one cluster": (tenant.path("/clusters/cluster-000"), auth, False),
            "(c) list 50 clusters": (tenant.path("/clusters"), auth, False),
            "(e) list 120 invoices": (tenant.path("/invoices"), auth, False),
            # The API's side of a create only: reconcilers are off here.
            "(d) create secret": (tenant.path("/secrets"), posting, True),
        }
        paths = {name: route for name, route in paths.items() if name[1] in only}
        print(f"\n### {backend}: {count} requests each, {concurrency} at a time, in process\n")
        print("| scenario | CPU µs/request | times (a) |\n|---|---|---|")
        asyncio.run(_measure(paths, count, profile, concurrency))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.inprocess", description=__doc__)
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument(
        "--profile", metavar="LETTER", help="print a CPU-clock cProfile of one scenario, e.g. c"
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="requests in flight at once (as many tasks, each calling in turn)",
    )
    parser.add_argument(
        "--only", default="abced", help="the scenarios' letters, e.g. ab ((a) is the baseline)"
    )
    arguments = parser.parse_args()
    backends = ["sqlite", "postgresql"] if arguments.backend == "both" else [arguments.backend]
    for backend in backends:
        run(
            backend,
            arguments.requests,
            arguments.profile,
            arguments.concurrency,
            arguments.only,
        )


if __name__ == "__main__":
    main()
