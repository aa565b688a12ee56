"""wrk as the load generator (a separate, compiled process), with the server's CPU measured
from /proc around each run."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench.server import TICKS_PER_SECOND, Process, cpu_seconds

SCRIPT = Path(__file__).with_name("report.lua")

#: Cores' worth of CPU that processes other than the server, wrk and the harness may use
#: during a run before its figures are flagged: on a 2-core machine a neighbour using a
#: tenth of a core already moves the ratios by several points.
OTHERS_LIMIT_CORES = 0.1


@dataclass(frozen=True)
class Figures:
    name: str
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: int
    cpu_seconds: float
    #: CPU seconds of each watched process (the server first) over the run.
    cpu_by_process: tuple[float, ...] = ()
    #: Cores' worth of CPU used meanwhile by every other process of the machine.
    others_cores: float = 0.0
    #: Cores' worth of CPU used meanwhile by PostgreSQL's processes (on this machine): the
    #: database serving the scenario, part of what is measured rather than a neighbour.
    database_cores: float = 0.0

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def cpu_ms_per_request(self) -> float:
        return 1000 * self.cpu_seconds / self.requests if self.requests else 0.0

    @property
    def loaded(self) -> bool:
        """Whether other processes used enough CPU during the run to skew its figures."""
        return self.others_cores > OTHERS_LIMIT_CORES


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine has spent busy since boot: /proc/stat's first
    line, everything but idle and iowait (user nice system idle iowait irq softirq steal)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split()[1:9]]
    return (sum(fields) - fields[3] - fields[4]) / TICKS_PER_SECOND


def database_cpu_seconds() -> float:
    """CPU seconds of PostgreSQL's processes running now (the postmaster and its children,
    every one named ``postgres``); a backend that ends during a run takes its CPU with it,
    so this errs low, towards calling a run loaded."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if stat.with_name("comm").read_text().strip() == "postgres":
                total += cpu_seconds(int(stat.parent.name))
        except (OSError, ValueError):
            continue  # the process has ended
    return total


def own_cpu_seconds() -> float:
    """CPU seconds of this process and of its children that have ended (wrk, once waited)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def settle(processes: list[Process], patience_seconds: float = 60.0) -> None:
    """Wait until the processes are idle: wrk stops at its deadline, but the requests it left
    queued are still served afterwards, and their time must not count for the next run."""
    interval = 0.25
    deadline = time.monotonic() + patience_seconds
    last = sum(process.cpu() for process in processes)
    while time.monotonic() < deadline:
        time.sleep(interval)
        now = sum(process.cpu() for process in processes)
        if now - last < 0.1 * interval:
            return
        last = now


def wrk_path() -> str:
    found = shutil.which("wrk")
    if found is None:
        raise SystemExit(
            "wrk is not installed: apt-get install wrk (make bench installs it as root)"
        )
    return found


def run_wrk(
    name: str,
    server: Process,
    url: str,
    *,
    seconds: float,
    connections: int,
    headers: dict[str, str] | None = None,
    post_path: str | None = None,
    prefix: str = "b",
    also: list[Process] | None = None,
) -> Figures:
    """Drive ``url`` for ``seconds``; CPU is the server's (and ``also``'s) over the run."""
    command = [
        wrk_path(),
        "-t1",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        "10s",
        "-s",
        str(SCRIPT),
    ]
    for key, value in (headers or {}).items():
        command += ["-H", f"{key}: {value}"]
    command.append(url)
    env = {**os.environ, "BENCH_POST": post_path or "", "BENCH_PREFIX": prefix}
    watched = [server, *(also or [])]
    settle(watched)
    before = [process.cpu() for process in watched]
    busy, own, database = machine_busy_seconds(), own_cpu_seconds(), database_cpu_seconds()
    started = time.monotonic()
    done = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    used = tuple(process.cpu() - start for process, start in zip(watched, before, strict=True))
    wall = time.monotonic() - started
    database = database_cpu_seconds() - database
    others = machine_busy_seconds() - busy - (own_cpu_seconds() - own) - sum(used) - database
    for x in done.stdout.splitlines():
        if x.startswith("BENCH_FIRST_ERROR"):
            print(x[:300])
    line = next(x for x in done.stdout.splitlines() if x.startswith("BENCH_JSON "))
    data = json.loads(line.removeprefix("BENCH_JSON "))
    errors = sum(
        data[key]
        for key in ("connect_errors", "read_errors", "write_errors", "status_errors", "timeouts")
    )
    return Figures(
        name=name,
        requests=data["requests"],
        seconds=data["duration_us"] / 1e6,
        p50_ms=data["p50_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        errors=errors,
        cpu_seconds=sum(used),
        cpu_by_process=used,
        others_cores=max(0.0, others / wall) if wall > 0 else 0.0,
        database_cores=max(0.0, database / wall) if wall > 0 else 0.0,
    )
