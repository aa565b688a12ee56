"""`tenantplane serve --workers 2` as real processes, on SQLite and PostgreSQL: both API
processes answer on the one port, /metrics sums what every process counted, a key revoked
through one process is refused by the other within TENANTPLANE_API_KEY_CACHE_SECONDS, the
reconcilers run in one process, and SIGTERM ends them all (exit 0) after the request in
flight."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from http.client import HTTPConnection
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import create_engine, text

from tenantplane.config import Settings
from tenantplane.server import default_workers, usable_cores
from tests.backends import postgres_database, sqlite_database
from tests.contract.server import (
    TENANTPLANE,
    create_tenant,
    free_port,
    server_env,
    wait_until_serving,
)

WORKERS = 2
# Three interpreters importing the application start at once (two API processes and the
# reconcilers'): on a loaded machine that takes minutes. The deadline turns a hang into a
# failure; it measures nothing.
DEADLINE_SECONDS = 240.0
CACHE_SECONDS = 1.0
TENANT = "workers"


@dataclass(frozen=True)
class Serve:
    process: subprocess.Popen[bytes]
    port: int
    log: Path
    env: dict[str, str]
    data_dir: Path
    admin_key: str
    workers: list[int]
    reconcilers: int

    def events(self) -> list[dict[str, Any]]:
        lines = self.log.read_text(errors="replace").splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]

    def wait_for(self, event: str, count: int = 1) -> list[dict[str, Any]]:
        """The log's ``event`` records once there are ``count`` (polled with a deadline)."""
        give_up = time.monotonic() + DEADLINE_SECONDS
        while time.monotonic() < give_up:
            found = [record for record in self.events() if record["event"] == event]
            if len(found) >= count:
                return found
            time.sleep(0.05)  # polling a condition with a deadline
        pytest.fail(f"no {count} {event!r} in the log: {self.log.read_text()[-3000:]}")


@contextmanager
def serving_workers(directory: Path, database_url: str) -> Iterator[Serve]:
    env = {
        **server_env(directory, database_url),
        "TENANTPLANE_DATA_DIR": str(directory / "data"),
        "TENANTPLANE_LOG_FORMAT": "json",
        "TENANTPLANE_API_KEY_CACHE_SECONDS": str(CACHE_SECONDS),
    }
    port = free_port()
    log = directory / "serve.log"
    argv = [TENANTPLANE, "serve", "--port", str(port), "--workers", str(WORKERS)]
    with log.open("wb") as output:
        process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=output)
    try:
        wait_until_serving(f"http://127.0.0.1:{port}", process, log, DEADLINE_SECONDS)
        admin_key, _ = create_tenant(env, TENANT)
        serve = Serve(process, port, log, env, directory / "data", admin_key, [], 0)
        [started] = serve.wait_for("server started")
        yield Serve(
            process,
            port,
            log,
            env,
            directory / "data",
            admin_key,
            started["workers"],
            started["reconcilers"],
        )
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Serve]:
    directory = tmp_path_factory.mktemp(f"workers-{request.param}")
    database = postgres_database() if request.param == "postgresql" else sqlite_database(directory)
    with database as url, serving_workers(directory, url) as serve:
        yield serve


def owner(serve: Serve, client: socket.socket) -> int | None:
    """The API process that accepted ``client``'s connection: the one holding the server
    side's socket (found by its inode in /proc/net/tcp), or None while none has."""
    client_port = client.getsockname()[1]
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote = int(fields[1].split(":")[1], 16), int(fields[2].split(":")[1], 16)
            if (local, remote) == (serve.port, client_port):
                inodes.add(f"socket:[{fields[9]}]")
    for pid in serve.workers:
        for descriptor in Path(f"/proc/{pid}/fd").iterdir():
            with suppress(OSError):
                if os.readlink(descriptor) in inodes:
                    return pid
    return None


def request(
    connection: HTTPConnection,
    method: str,
    path: str,
    key: str | None = None,
    document: dict[str, Any] | None = None,
) -> tuple[int, bytes]:
    """The status and body of one request on ``connection``."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if document is not None:
        headers["Content-Type"] = "application/json"
    body = json.dumps(document) if document is not None else None
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    return response.status, response.read()


def one_connection_each(serve: Serve) -> tuple[list[HTTPConnection], int]:
    """A kept-alive connection to each API process (the kernel hands a new connection to
    either), and the /healthz requests it took to find them."""
    held: dict[int, HTTPConnection] = {}
    for sent in range(1, 301):
        connection = HTTPConnection("127.0.0.1", serve.port, timeout=30)
        assert request(connection, "GET", "/healthz")[0] == 200
        assert connection.sock is not None
        pid = owner(serve, connection.sock)
        assert pid is not None
        if pid in held:
            connection.close()
        else:
            held[pid] = connection
        if len(held) == WORKERS:
            return list(held.values()), sent
    pytest.fail(f"every connection went to the same process ({list(held)})")


def healthz_count(connection: HTTPConnection) -> float:
    connection.request("GET", "/metrics")
    text = connection.getresponse().read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "tenantplane_http_requests_total" and sample.labels == {
                "method": "GET",
                "route": "/healthz",
                "status": "200",
            }:
                return sample.value
    return 0.0


def test_metrics_show_the_requests_of_every_process(served: Serve) -> None:
    before = healthz_count(HTTPConnection("127.0.0.1", served.port, timeout=30))
    connections, sent = one_connection_each(served)
    for connection in connections:
        for _ in range(3):
            assert request(connection, "GET", "/healthz")[0] == 200
    sent += 3 * len(connections)
    # A request is counted once answered: wait until the count has caught up.
    give_up = time.monotonic() + DEADLINE_SECONDS
    while healthz_count(connections[0]) - before < sent and time.monotonic() < give_up:
        time.sleep(0.05)  # polling a condition with a deadline
    # Whichever process answers the scrape, it counts the other's requests too.
    assert [healthz_count(connection) - before for connection in connections] == [sent] * 2
    # process_* for each process of the serve: the supervisor, its API processes and the
    # reconcilers process.
    connections[0].request("GET", "/metrics")
    text = connections[0].getresponse().read().decode()
    [rss] = [
        f for f in text_string_to_metric_families(text) if f.name == "process_resident_memory_bytes"
    ]
    pids = {int(sample.labels["pid"]) for sample in rss.samples}
    assert pids == {served.process.pid, served.reconcilers, *served.workers}


# Connections a client opens together (a load balancer's pool, a load generator).
TOGETHER = 64


def test_connections_opened_together_are_spread_over_the_processes(served: Serve) -> None:
    """Each API process listens on a socket of its own (SO_REUSEPORT), and the kernel
    hands each new connection to one of them by its addresses' hash. On one shared socket,
    the process woken first accepted every connection then waiting, and kept them: the
    others served none of them (bench/history.md, round 19)."""
    clients = [
        socket.create_connection(("127.0.0.1", served.port), timeout=30) for _ in range(TOGETHER)
    ]
    try:
        for client in clients:
            client.sendall(b"GET /healthz HTTP/1.1\r\nHost: workers\r\n\r\n")
        for client in clients:
            assert client.recv(65536).startswith(b"HTTP/1.1 200")
        owners = [owner(served, client) for client in clients]
    finally:
        for client in clients:
            client.close()
    counts = {pid: owners.count(pid) for pid in served.workers}
    assert None not in owners
    # By a hash, not in turns: each process gets about half (fewer than a quarter of 64
    # has a chance of about 1 in 10,000 a run).
    assert min(counts.values()) >= TOGETHER // 4, counts


def test_another_serve_on_the_port_is_refused_although_its_processes_share_it(
    served: Serve,
) -> None:
    """The processes' sockets let each other share the port; a new `serve` binds first
    without that option, so it finds the port in use."""
    argv = [TENANTPLANE, "serve", "--port", str(served.port), "--workers", "2", "--json"]
    done = subprocess.run(argv, env=served.env, capture_output=True, timeout=120, check=False)
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)["error"]["code"] == "ADDRESS_IN_USE"


def test_a_key_revoked_through_one_process_is_refused_by_the_other_within_the_cache_time(
    served: Serve,
) -> None:
    made = subprocess.run(
        [TENANTPLANE, "apikey", "create", TENANT, "--role", "admin", "--json"],
        env=served.env,
        capture_output=True,
        check=True,
    )
    created = json.loads(made.stdout)["apiKey"]
    tenant = f"/api/v1/tenants/{TENANT}"
    # After the command: uvicorn closes a connection left idle for 5 s.
    revoking, other = one_connection_each(served)[0]
    # The other process has looked the key up, and may serve it from its cache.
    assert request(other, "GET", tenant, created["key"])[0] == 200
    revoked = request(revoking, "DELETE", f"{tenant}/apikeys/{created['id']}", served.admin_key)
    assert revoked[0] == 204
    assert request(revoking, "GET", tenant, created["key"])[0] == 401
    # The bound itself: an entry the other process kept is older than the cache time now.
    time.sleep(CACHE_SECONDS)
    assert request(other, "GET", tenant, created["key"])[0] == 401


def test_every_process_closes_a_connection_whose_request_head_never_completes(
    served: Serve,
) -> None:
    """Each API process runs the protocol with the head deadline (uvicorn's own would wait
    for the rest of the head as long as the client keeps the connection): closed after
    TENANTPLANE_REQUEST_HEAD_TIMEOUT_SECONDS, 10 by default (a shorter one would close the
    other tests' connections between their requests)."""
    stalled: dict[int, socket.socket] = {}
    for _ in range(300):
        client = socket.create_connection(("127.0.0.1", served.port), timeout=60)
        client.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        give_up = time.monotonic() + DEADLINE_SECONDS
        while (pid := owner(served, client)) is None and time.monotonic() < give_up:
            time.sleep(0.01)  # until a process has accepted the connection
        assert pid is not None
        if pid in stalled:
            client.close()
        else:
            stalled[pid] = client
        if len(stalled) == WORKERS:
            break
    assert sorted(stalled) == sorted(served.workers)
    for client in stalled.values():
        with client:
            # Closed by the server without an answer; a hang would end in TimeoutError.
            assert client.recv(65536) == b""


def test_the_reconcilers_run_in_one_process_of_their_own(served: Serve) -> None:
    connection = HTTPConnection("127.0.0.1", served.port, timeout=30)
    name = f"c-{uuid.uuid4().hex[:8]}"
    clusters = f"/api/v1/tenants/{TENANT}/clusters"
    status, body = request(connection, "POST", clusters, served.admin_key, {"name": name})
    assert status == 201, body
    give_up = time.monotonic() + DEADLINE_SECONDS
    phase = None
    while phase != "Running" and time.monotonic() < give_up:
        status, body = request(connection, "GET", f"{clusters}/{name}", served.admin_key)
        assert status == 200, body
        phase = json.loads(body)["status"]["phase"]
        time.sleep(0.05)  # polling a condition with a deadline
    assert phase == "Running"
    assert len(served.wait_for("worker started")) == 1
    assert served.reconcilers not in served.workers


def test_without_redis_the_start_says_each_process_counts_the_rate_limit(served: Serve) -> None:
    [warning] = served.wait_for("rate limits are counted per process")
    assert warning["level"] == "warning"
    assert warning["workers"] == WORKERS


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_sigterm_ends_every_process_with_exit_0_after_the_request_in_flight(
    tmp_path: Path, backend: str
) -> None:
    database = postgres_database() if backend == "postgresql" else sqlite_database(tmp_path)
    with database as url, serving_workers(tmp_path, url) as serve:
        body = json.dumps({"name": "in-flight"}).encode()
        head = (
            f"POST /api/v1/tenants/{TENANT}/clusters HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {serve.admin_key}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        with socket.create_connection(("127.0.0.1", serve.port), timeout=60) as client:
            client.sendall(head + body[:1])
            give_up = time.monotonic() + DEADLINE_SECONDS
            while owner(serve, client) is None and time.monotonic() < give_up:
                time.sleep(0.05)  # until an API process has accepted the connection
            serve.process.send_signal(signal.SIGTERM)
            serve.wait_for("Shutting down", WORKERS)
            client.sendall(body[1:])
            answer = b""
            while chunk := client.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 201 "), answer[:500]
        code = serve.process.wait(timeout=60)
        # The reconcilers gave their leases up: none is left for a successor to wait out.
        engine = create_engine(url.replace("+aiosqlite", ""))
        with engine.connect() as connection:
            leased = connection.scalar(
                text("SELECT count(*) FROM clusters WHERE lock_owner IS NOT NULL")
            )
        engine.dispose()
        assert leased == 0
    assert code == 0, serve.log.read_text()[-3000:]
    for pid in [*serve.workers, serve.reconcilers]:
        assert not Path(f"/proc/{pid}").exists()
    assert [record["event"] for record in serve.events()][-1] == "server stopped"
    assert not list(serve.data_dir.glob("metrics-*"))


def test_the_default_is_one_process_on_sqlite_and_one_per_usable_core_on_postgresql() -> None:
    sqlite = Settings(database_url="sqlite+aiosqlite:///./x.db")
    postgresql = Settings(database_url="postgresql+psycopg://u@h/d")
    assert default_workers(sqlite) == 1
    assert default_workers(postgresql) == usable_cores()
    assert 1 <= usable_cores() <= len(os.sched_getaffinity(0))


@pytest.mark.parametrize(
    ("cpu_max", "limit"),
    [("50000 100000", 1), ("150000 100000", 2), ("max 100000", None), (None, None)],
)
def test_usable_cores_are_bounded_by_the_cgroups_cpu_limit(
    tmp_path: Path, cpu_max: str | None, limit: int | None
) -> None:
    """A container limited to 1.5 CPUs gets 2 processes (at most its affinity); without a
    limit, or without a cgroup v2 CPU controller, the affinity alone counts."""
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "cgroup").write_text("0::/kubepods/pod-a/api\n")
    if cpu_max is not None:
        (tmp_path / "cgroup" / "kubepods" / "pod-a" / "api").mkdir(parents=True)
        (tmp_path / "cgroup" / "kubepods" / "pod-a" / "api" / "cpu.max").write_text(cpu_max)
    affinity = len(os.sched_getaffinity(0))
    expected = affinity if limit is None else min(affinity, limit)
    assert usable_cores(tmp_path / "proc", tmp_path / "cgroup") == expected


def test_fewer_than_one_process_is_a_usage_error_before_anything_is_done(tmp_path: Path) -> None:
    done = subprocess.run(
        [TENANTPLANE, "serve", "--port", str(free_port()), "--workers", "0"],
        env=server_env(tmp_path),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "--workers" in done.stderr
    assert not (tmp_path / "tenantplane.db").exists()
