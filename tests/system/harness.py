"""Real processes on loopback, deployed as operators run tenantplane.

A ``Fleet`` starts `tenantplane serve` replicas on free ports, `tenantplane worker`
processes and one-shot commands (`migrate`, `billing run`), all from one environment, and
signals them: SIGKILL, SIGSTOP, SIGCONT, restart. Each process writes stderr (its logs) to
``<name>.log`` and stdout to ``<name>.out`` in the test's directory; a restarted process
appends to the same files after a ``--- start N ---`` line. The fixtures stop every process
when the test ends and print the logs of a failed test.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.backends import redis_url
from tests.contract.server import TENANTPLANE, free_port, server_env, wait_until_serving

# Several processes start at once on a loaded two-core machine, each importing the whole
# application: generous, and only ever reached when a process never gets ready.
START_DEADLINE_SECONDS = 180.0
STOP_GRACE_SECONDS = 20.0
# The system tests' Redis database: apart from the other tests' (database 0).
SYSTEM_REDIS_DB = 13
LOG_TAIL_CHARS = 6000
T = TypeVar("T")


class Node:
    """One process of the deployment; it can be started again after it stopped or died."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        env: Mapping[str, str],
        directory: Path,
        port: int | None = None,
    ) -> None:
        self.name = name
        self.argv = argv
        # libpq reads PGAPPNAME: the process's sessions are recognisable in pg_stat_activity.
        self.env = {**env, "PGAPPNAME": name}
        self.log = directory / f"{name}.log"
        self.out = directory / f"{name}.out"
        self.port = port
        self.starts = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        assert self.port is not None, f"{self.name} serves no HTTP"
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None, f"{self.name} was never started"
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        assert not self.alive, f"{self.name} is already running"
        self.starts += 1
        with self.log.open("ab") as log, self.out.open("ab") as out:
            log.write(f"--- start {self.starts} ---\n".encode())
            log.flush()
            self.process = subprocess.Popen(self.argv, env=self.env, stdout=out, stderr=log)

    def wait_ready(self) -> None:
        """An API answers /readyz; a worker has logged ``worker started`` for this start."""
        assert self.process is not None
        if self.port is not None:
            try:
                wait_until_serving(self.base_url, self.process, self.log, START_DEADLINE_SECONDS)
            except pytest.fail.Exception as failure:
                pytest.fail(f"{self.name}: {failure}\n{self.name}'s stdout: {self.output()}")
            return
        give_up = time.monotonic() + START_DEADLINE_SECONDS
        while self.log.read_text(errors="replace").count("worker started") < self.starts:
            if self.process.poll() is not None:
                pytest.fail(f"{self.name} exited: {self.tail()}")
            if time.monotonic() > give_up:
                pytest.fail(f"{self.name} did not start within {START_DEADLINE_SECONDS:.0f}s")
            time.sleep(0.1)  # polling a condition with a deadline

    def wait(self, timeout: float = START_DEADLINE_SECONDS) -> int:
        """The exit code of a one-shot command."""
        assert self.process is not None
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{self.name} did not finish within {timeout:.0f}s: {self.tail()}")

    def kill(self) -> None:
        """SIGKILL, as the OOM killer or a lost machine would."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def pause(self) -> None:
        """SIGSTOP, as a paused VM or a long GC pause would: sockets and locks stay held."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def restart(self) -> None:
        if self.alive:
            self.kill()
        self.start()
        self.wait_ready()

    def stop(self) -> None:
        """SIGTERM (a stopped process is continued first), SIGKILL after a grace period."""
        if not self.alive:
            return
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            self.kill()

    def output(self) -> str:
        return self.out.read_text(errors="replace") if self.out.exists() else ""

    def tail(self, chars: int = LOG_TAIL_CHARS) -> str:
        """The end of the logs, and stdout when there is any (a one-shot command's result,
        the `{"error": …}` of a command that failed)."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        output = self.output()
        return text[-chars:] + (f"\n--- stdout ---\n{output[-chars:]}" if output else "")


class Fleet:
    """The processes of one test; every one is stopped at the end."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.nodes: list[Node] = []

    def _add(self, node: Node) -> Node:
        assert all(other.name != node.name for other in self.nodes), node.name
        self.nodes.append(node)
        return node

    def api(self, name: str, env: Mapping[str, str]) -> Node:
        port = free_port()
        # One process, as each replica is one here: its pid owns the leases it takes, and
        # freezing or killing it freezes or kills the replica.
        argv = [TENANTPLANE, "serve", "--host", "127.0.0.1", "--port", str(port), "--json"]
        argv += ["--workers", "1"]
        return self._add(Node(name, argv, env, self.directory, port))

    def worker(self, name: str, env: Mapping[str, str]) -> Node:
        return self._add(Node(name, [TENANTPLANE, "worker", "--json"], env, self.directory))

    def command(self, name: str, env: Mapping[str, str], *args: str) -> Node:
        return self._add(Node(name, [TENANTPLANE, *args], env, self.directory))

    def run(self, name: str, env: Mapping[str, str], *args: str) -> Node:
        """A one-shot command run to completion; it must succeed."""
        node = self.command(name, env, *args)
        node.start()
        code = node.wait()
        assert code == 0, f"{name} exited {code}: {node.tail()}"
        return node

    def deploy(
        self, env: Mapping[str, str], apis: int, workers: int, *, api_reconcilers: bool = False
    ) -> Deployment:
        """As operators roll out: `tenantplane migrate`, then API replicas and `tenantplane
        worker` processes, all started at once. API replicas run no reconcilers unless
        ``api_reconcilers`` (then every process has the very same settings)."""
        self.run("migrate", env, "migrate", "--json")
        api_env = {**env, "TENANTPLANE_RUN_RECONCILERS": str(api_reconcilers).lower()}
        deployment = Deployment(
            apis=[self.api(f"api-{index}", api_env) for index in range(1, apis + 1)],
            workers=[self.worker(f"worker-{index}", env) for index in range(1, workers + 1)],
        )
        self.start(*deployment.apis, *deployment.workers)
        return deployment

    def start(self, *nodes: Node) -> None:
        """Start ``nodes`` together (they boot concurrently), then wait until each is ready."""
        for node in nodes:
            node.start()
        for node in nodes:
            node.wait_ready()

    def stop_all(self) -> None:
        for node in self.nodes:
            node.stop()

    def logs(self) -> str:
        return "\n".join(
            f"===== {node.name} (last {LOG_TAIL_CHARS} characters of {node.log}) =====\n"
            f"{node.tail()}"
            for node in self.nodes
        )


@dataclass(frozen=True)
class Deployment:
    apis: list[Node]
    workers: list[Node]


def client_of(node: Node, timeout: float) -> httpx.AsyncClient:
    """An HTTP client of an API process. Idle connections are dropped before the server's
    keep-alive timeout (uvicorn: 5 s) could close one just as a request reuses it."""
    limits = httpx.Limits(max_connections=100, keepalive_expiry=2.0)
    return httpx.AsyncClient(base_url=node.base_url, timeout=timeout, limits=limits)


def system_redis_url() -> str:
    """The tests' Redis, on the system tests' own database number."""
    parts = urlsplit(redis_url())
    return urlunsplit(parts._replace(path=f"/{SYSTEM_REDIS_DB}"))


def deployment_env(tmp_path: Path, database_url: str, **settings: str) -> dict[str, str]:
    """Settings shared by every process of a deployment: ``settings`` are TENANTPLANE_*
    values by lower-case name (``rate_limit="10/minute"``)."""
    env = server_env(tmp_path, database_url)
    env["TENANTPLANE_DATA_DIR"] = str(tmp_path / "data")
    env["TENANTPLANE_LOG_JSON"] = "true"
    env.update({f"TENANTPLANE_{name.upper()}": value for name, value in settings.items()})
    return env


def libpq_dsn(database_url: str) -> str:
    """The same PostgreSQL database for a plain psycopg connection of the test itself."""
    url = make_url(database_url).set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


def sqlite_url(directory: Path) -> str:
    return f"sqlite+aiosqlite:///{directory / 'tenantplane.db'}"


def owner_of(node: Node) -> str:
    """The lease owner id of a process's reconcilers: ``host:pid:random``."""
    return f":{node.pid}:"


async def eventually(
    check: Callable[[], Awaitable[T | None]],
    what: str,
    deadline: float,
    interval: float = 0.1,
    *,
    explain: Callable[[], Awaitable[str]] | None = None,
) -> T:
    """The first truthy result of ``check``, polled until ``deadline`` seconds have passed
    (the deadline turns a hang into a failure; it measures nothing). ``explain`` describes,
    in the failure's message, the state that kept ``check`` from passing."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + deadline
    while True:
        result = await check()
        if result:
            return result
        if loop.time() > give_up:
            state = f"\n{await explain()}" if explain is not None else ""
            pytest.fail(f"gave up after {deadline:.0f}s waiting for {what}{state}")
        await asyncio.sleep(interval)
