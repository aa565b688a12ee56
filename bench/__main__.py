"""Load benchmarks: throughput of API operations as ratios against a baseline in the same run.

Starts a real `tenantplane serve` process on a loopback port (SQLite by default, or the
database in TENANTPLANE_BENCH_DATABASE_URL), creates a tenant through the operator CLI, and
drives each scenario with a bounded number of concurrent HTTP requests for a bounded time.
The baseline is `/healthz` (no database, no authentication): ratios show what authentication,
the rate limiter and the database cost, independent of how fast this machine is.

    uv run python -m bench [--seconds 5] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx


@dataclass
class Result:
    name: str
    requests: int
    seconds: float
    errors: int

    @property
    def rate(self) -> float:
        return self.requests / self.seconds


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


Request = Callable[[httpx.AsyncClient], Coroutine[Any, Any, httpx.Response]]


async def drive(
    name: str, client: httpx.AsyncClient, request: Request, seconds: float, concurrency: int
) -> Result:
    deadline = time.perf_counter() + seconds
    done = errors = 0

    async def worker() -> None:
        nonlocal done, errors
        while time.perf_counter() < deadline:
            response = await request(client)
            done += 1
            errors += response.status_code >= 400

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Result(name, done, time.perf_counter() - started, errors)


async def wait_ready(base: str, process: subprocess.Popen[bytes]) -> None:
    async with httpx.AsyncClient() as client:
        for _ in range(300):
            if process.poll() is not None:
                raise RuntimeError("server exited during start-up")
            try:
                if (await client.get(f"{base}/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError("server did not become ready")


@dataclass
class Server:
    base: str
    key: str
    process: subprocess.Popen[bytes]


def start_server() -> tuple[Server, str]:
    workdir = Path(tempfile.mkdtemp(prefix="tenantplane-bench-"))
    env = {
        **os.environ,
        "TENANTPLANE_DATABASE_URL": os.environ.get(
            "TENANTPLANE_BENCH_DATABASE_URL", f"sqlite+aiosqlite:///{workdir / 'bench.db'}"
        ),
        "TENANTPLANE_SECRET_KEY": "bench-secret",
        "TENANTPLANE_RATE_LIMIT": "100000000/minute",
        "TENANTPLANE_LOG_LEVEL": "WARNING",
    }
    cli = [sys.executable, "-m", "tenantplane"]
    subprocess.run([*cli, "migrate"], env=env, check=True, capture_output=True)
    created = subprocess.run(
        [*cli, "tenant", "create", f"bench-{os.getpid()}", "--json"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    document = json.loads(created.stdout)
    port = free_port()
    process = subprocess.Popen(
        [*cli, "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    return Server(base, document["apiKey"]["key"], process), document["tenant"]["name"]


async def measure(server: Server, tenant: str, seconds: float, concurrency: int) -> list[Result]:
    await wait_ready(server.base, server.process)
    headers = {"Authorization": f"Bearer {server.key}"}
    wrong = {"Authorization": "Bearer svc_" + "x" * 43}
    path = f"/api/v1/tenants/{tenant}"
    scenarios: list[tuple[str, Request]] = [
        ("baseline GET /healthz", lambda c: c.get("/healthz")),
        ("GET /readyz (database round trip)", lambda c: c.get("/readyz")),
        ("GET tenant (API key auth + read)", lambda c: c.get(path, headers=headers)),
        ("GET apikeys (admin list)", lambda c: c.get(f"{path}/apikeys", headers=headers)),
        ("unknown key (401, then 429 backoff)", lambda c: c.get(path, headers=wrong)),
    ]
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=server.base, limits=limits, timeout=30) as client:
        return [
            await drive(name, client, request, seconds, concurrency) for name, request in scenarios
        ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    server, tenant = start_server()
    try:
        results = asyncio.run(measure(server, tenant, args.seconds, args.concurrency))
    finally:
        server.process.terminate()
        server.process.wait(timeout=30)
    baseline = results[0].rate
    print(f"{'scenario':40} {'req/s':>9} {'ratio':>7} {'errors':>7}")
    for result in results:
        print(
            f"{result.name:40} {result.rate:9.0f} {result.rate / baseline:7.2f} {result.errors:7d}"
        )


if __name__ == "__main__":
    main()
