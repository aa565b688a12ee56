"""The clients read at most a bounded answer, and tpctl warns before sending a credential in
clear to another machine (issue 35, finding 9)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tenantplane_client import (
    DEFAULT_MAX_RESPONSE_BYTES,
    NO_RETRIES,
    AsyncTenantplane,
    ResponseTooLarge,
    Tenantplane,
)
from tests.clients.conftest import TPCTL, Run, Tenant, ok

MIB = 1024 * 1024
CHUNK = b"x" * (64 * 1024)


def _handler(size: int, declared: bool) -> type[BaseHTTPRequestHandler]:
    """Answers every GET with a valid VersionList padded to about ``size`` bytes, with a
    Content-Length when ``declared``, else chunked (the size known only by reading)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, message: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            head = b'{"default": "1.33", "items": [], "padding": "'
            tail = b'"}'
            chunks = size // len(CHUNK)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if declared:
                length = len(head) + chunks * len(CHUNK) + len(tail)
                self.send_header("Content-Length", str(length))
            else:
                self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for part in [head, *([CHUNK] * chunks), tail]:
                    if declared:
                        self.wfile.write(part)
                    else:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                if not declared:
                    self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading: what the cap is for

    return Handler


@contextmanager
def huge(size: int, *, declared: bool = False) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(size, declared))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("declared", [False, True], ids=["chunked", "content-length"])
def test_the_sdk_stops_reading_past_its_cap(declared: bool) -> None:
    with huge(3 * MIB, declared=declared) as url:
        api = Tenantplane(url, "t", "k", retry=NO_RETRIES, max_response_bytes=MIB)
        with api, pytest.raises(ResponseTooLarge) as raised:
            api.versions()
        assert raised.value.limit == MIB
        assert "larger than 1 MiB (1048576 bytes)" in str(raised.value)
        # Under the cap, the same answer is read whole.
        with Tenantplane(url, "t", "k", retry=NO_RETRIES, max_response_bytes=4 * MIB) as api:
            assert api.versions() == []


async def test_the_async_sdk_stops_reading_past_its_cap() -> None:
    with huge(3 * MIB) as url:
        async with AsyncTenantplane(url, "t", "k", retry=NO_RETRIES, max_response_bytes=MIB) as api:
            with pytest.raises(ResponseTooLarge):
                await api.versions()


def test_tpctl_refuses_a_60_mb_answer_in_bounded_memory() -> None:
    """The finding: a 60 MB answer took tpctl to 460 MB of resident memory."""
    assert DEFAULT_MAX_RESPONSE_BYTES == 16 * MIB
    with huge(60 * MIB) as url:
        measure = (
            "import resource, subprocess, sys\n"
            "result = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
            "print(result.returncode, peak, repr(result.stderr[-600:]))\n"
        )
        env = {
            "PATH": os.environ["PATH"],
            "HOME": "/nonexistent",
            "TPCTL_URL": url,
            "TPCTL_TENANT": "t",
            "TPCTL_API_KEY": "k",
            "COLUMNS": "200",
        }
        result = subprocess.run(
            [sys.executable, "-c", measure, TPCTL, "versions", "list", "-o", "json"],
            capture_output=True,
            text=True,
            env=env,
            check=True,
            timeout=120,
        )
    code, peak_kib, stderr = result.stdout.split(" ", 2)
    assert int(code) == 1, stderr
    assert "larger than 16 MiB" in stderr, stderr
    assert int(peak_kib) < 150 * 1024, f"tpctl peaked at {int(peak_kib) // 1024} MiB"


def test_tpctl_warns_before_sending_a_credential_in_clear(tpctl: Run) -> None:
    # Loopback over http: no warning (the README's own set-up).
    assert "Warning" not in tpctl("tenant", "get").stderr
    for url in ("http://example.invalid:9", "http://10.0.0.1.invalid"):
        far = tpctl("tenant", "get", env={"TPCTL_URL": url})
        assert far.returncode == 8, far.stderr
        assert (
            f"Warning: {url}: http:// to a host that is not loopback: the API key or token travels "
            "unencrypted; use https://" in " ".join(far.stderr.split())
        ), far.stderr
    tls = tpctl("tenant", "get", env={"TPCTL_URL": "https://example.invalid:9"})
    assert tls.returncode == 8
    assert "Warning" not in tls.stderr


def test_a_profile_takes_its_key_from_standard_input(tpctl: Run, tenant: Tenant) -> None:
    """The README's set-up keeps the key off the command line (``ps`` shows arguments)."""
    no_env = {"TPCTL_URL": "", "TPCTL_TENANT": "", "TPCTL_API_KEY": ""}
    arguments = ("--url", tenant.url, "--tenant", tenant.name, "--api-key-stdin", "--use")
    saved = tpctl("config", "set-profile", "piped", *arguments, env=no_env, stdin=tenant.key + "\n")
    assert saved.returncode == 0, saved.stderr
    assert ok(tpctl("tenant", "get", env=no_env))["name"] == tenant.name
    shown = ok(tpctl("config", "view", "--show-secrets", "-o", "json", env=no_env))
    assert shown["profiles"]["piped"]["api_key"] == tenant.key
