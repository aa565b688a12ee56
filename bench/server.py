"""A `tenantplane serve` (or `worker`) process as in production, and its CPU time (with its
child processes')."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

CLI = [sys.executable, "-m", "tenantplane"]
TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process, all its threads included (/proc/PID/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    # Fields after the command name, which is in parentheses and may contain spaces.
    fields = stat.rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / TICKS_PER_SECOND


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (`serve --workers N`: the supervisor, its API processes
    and its reconcilers process), from /proc/PID/task/TID/children."""
    found = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue  # the thread has ended
        for child in children:
            found += process_tree(int(child))
    return found


def tree_cpu_seconds(pid: int) -> float:
    """CPU of ``pid`` and of its descendants; one that ends meanwhile counts for nothing."""
    total = 0.0
    for member in process_tree(pid):
        with contextlib.suppress(OSError):
            total += cpu_seconds(member)
    return total


def cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([*CLI, *args], env=env, check=True, capture_output=True, text=True)
    return done.stdout


@dataclass
class Process:
    """A long-running tenantplane command; its log goes to a file, as a service's would."""

    args: list[str]
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] = field(init=False)

    def __post_init__(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [*CLI, *self.args], env=self.env, stdout=log, stderr=subprocess.STDOUT
            )

    @property
    def pid(self) -> int:
        return self.process.pid

    def cpu(self) -> float:
        return tree_cpu_seconds(self.pid)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Server(Process):
    """`tenantplane serve --workers N`: its CPU is that of all its processes."""

    def __init__(self, env: dict[str, str], log: Path, workers: int = 1) -> None:
        self.port = free_port()
        arguments = ["serve", "--port", str(self.port), "--workers", str(workers)]
        super().__init__(arguments, env, log)
        self.base = f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited during start-up; see {self.log}")
            try:
                if httpx.get(f"{self.base}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"server did not become ready; see {self.log}")
