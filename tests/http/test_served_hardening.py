"""Against a real `tenantplane serve` process: response headers, the request-head timeout,
the authentication backoff on a shared address and the webhook route's own budget."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.contract.server import Served, served
from tests.fakes.paddle import FakePaddle
from tests.http_client import bearer

# Far beyond the configured head timeout: a bound on the documented behaviour, not a speed.
EOF_DEADLINE_SECONDS = 30.0
HEAD_TIMEOUT_SECONDS = 1


@pytest.fixture
def paddle() -> Iterator[FakePaddle]:
    fake = FakePaddle().start()
    yield fake
    fake.stop()


def api(server: Served) -> str:
    return f"{server.base_url}/api/v1/tenants/{server.tenant}"


def test_responses_carry_the_security_headers_and_no_server_header(tmp_path: Path) -> None:
    with served(tmp_path, extra_env={"TENANTPLANE_HSTS": "true"}) as server:
        admin = bearer(server.admin_key)
        created = httpx.post(
            f"{api(server)}/apikeys",
            headers=admin,
            json={"displayName": "ci", "role": "readonly"},
        )
        assert created.status_code == 201
        responses = {
            "a created key": created,
            "a read": httpx.get(api(server), headers=admin),
            "a 401": httpx.get(api(server)),
            "a 404": httpx.get(f"{server.base_url}/api/v1/nowhere", headers=admin),
            "health": httpx.get(f"{server.base_url}/healthz"),
        }
        for case, response in responses.items():
            assert response.headers["cache-control"] == "no-store", case
            assert response.headers["x-content-type-options"] == "nosniff", case
            assert response.headers["strict-transport-security"] == "max-age=31536000", case
            assert "server" not in response.headers, case


def wait_for_eof(connection: socket.socket) -> bytes:
    """Read until the server closes the connection; fail after a generous deadline."""
    connection.settimeout(EOF_DEADLINE_SECONDS)
    received = b""
    try:
        while chunk := connection.recv(4096):
            received += chunk
    except TimeoutError:
        pytest.fail(f"the connection was still open after {EOF_DEADLINE_SECONDS} s")
    return received


def read_response(connection: socket.socket) -> bytes:
    """One whole response (head and Content-Length body) from a kept-alive connection."""
    connection.settimeout(EOF_DEADLINE_SECONDS)
    received = b""
    while b"\r\n\r\n" not in received:
        received += connection.recv(4096)
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += connection.recv(4096)
    return received


def test_a_partial_request_head_is_disconnected_after_the_timeout(tmp_path: Path) -> None:
    settings = {"TENANTPLANE_REQUEST_HEAD_TIMEOUT_SECONDS": str(HEAD_TIMEOUT_SECONDS)}
    with served(tmp_path, extra_env=settings) as server:
        host, port = server.base_url.removeprefix("http://").split(":")
        address = (host, int(port))
        # Half a request line; and a connection that sends nothing at all.
        with socket.create_connection(address) as half, socket.create_connection(address) as mute:
            half.sendall(b"GET /api/v1/versi")
            assert wait_for_eof(half) == b""
            assert wait_for_eof(mute) == b""
        # A complete request is answered; then half of the next head on the same
        # keep-alive connection is disconnected as well.
        with socket.create_connection(address) as kept:
            kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            assert read_response(kept).startswith(b"HTTP/1.1 200")
            kept.sendall(b"GET /healthz HTTP/1.1\r\nHo")
            assert wait_for_eof(kept) == b""
        # A head sent in several writes, complete within the timeout, is served.
        with socket.create_connection(address) as slow:
            slow.sendall(b"GET /healthz HTTP/1.1\r\n")
            slow.sendall(b"Host: t\r\nConnection: close\r\n\r\n")
            assert wait_for_eof(slow).startswith(b"HTTP/1.1 200")


def test_a_guesser_behind_a_shared_address_does_not_lock_out_valid_keys(
    tmp_path: Path,
) -> None:
    env = {
        "TENANTPLANE_AUTH_FAILURE_THRESHOLD": "5",
        # Clients are told apart by X-Forwarded-For from the loopback "proxy".
        "TENANTPLANE_TRUSTED_PROXIES": "127.0.0.1",
    }
    with served(tmp_path, extra_env=env) as server:
        nat = {"X-Forwarded-For": "198.51.100.7"}
        wrong = {**nat, "Authorization": "Bearer svc_" + "E" * 43}
        for _ in range(5):
            assert httpx.get(api(server), headers=wrong).status_code == 401
        refused = httpx.get(api(server), headers=wrong)
        assert refused.status_code == 429
        assert refused.json()["code"] == "AUTH_BACKOFF"
        assert int(refused.headers["Retry-After"]) >= 1
        # A colleague behind the same NAT, with a valid key, is served.
        valid = {**nat, **bearer(server.admin_key)}
        assert httpx.get(api(server), headers=valid).status_code == 200
        assert httpx.get(f"{api(server)}/clusters", headers=valid).status_code == 200


def test_webhooks_are_outside_the_backoff_and_have_their_own_budget(
    tmp_path: Path, paddle: FakePaddle
) -> None:
    env = {
        "TENANTPLANE_AUTH_FAILURE_THRESHOLD": "5",
        "TENANTPLANE_TRUSTED_PROXIES": "127.0.0.1",
        "TENANTPLANE_WEBHOOK_RATE_LIMIT": "8/minute",
        "TENANTPLANE_BILLING_PROVIDER": "paddle",
        "TENANTPLANE_ALLOW_SIMULATED_BILLING": "true",
        "TENANTPLANE_PADDLE_API_URL": paddle.url,
        "TENANTPLANE_PADDLE_API_KEY": paddle.api_key,
        "TENANTPLANE_PADDLE_WEBHOOK_SECRET": paddle.webhook_secret,
        "TENANTPLANE_PADDLE_WEBHOOK_TOLERANCE_SECONDS": "300",
    }
    with served(tmp_path, extra_env=env) as server:
        webhook = f"{server.base_url}/api/v1/webhooks/paddle"
        # Paddle delivers from an address where someone failed with API keys five times.
        shared = {"X-Forwarded-For": "203.0.113.50"}
        wrong = {**shared, "Authorization": "Bearer svc_" + "F" * 43}
        for _ in range(5):
            assert httpx.get(api(server), headers=wrong).status_code == 401
        assert httpx.get(api(server), headers=wrong).json()["code"] == "AUTH_BACKOFF"
        body = paddle.event("transaction.completed", {"id": "txn_unknown"})
        delivered = httpx.post(
            webhook, content=body, headers={**shared, **paddle.signed_headers(body)}
        )
        assert delivered.status_code == 200, delivered.text

        # Bad signatures from a fresh address do not put it in backoff.
        forger = {"X-Forwarded-For": "203.0.113.51"}
        forged_headers = {**forger, **paddle.signed_headers(body, secret="guess")}
        for _ in range(6):
            forged = httpx.post(webhook, content=body, headers=forged_headers)
            assert forged.json()["code"] == "WEBHOOK_SIGNATURE_INVALID"
        not_blocked = httpx.get(api(server), headers={**forger, "Authorization": "Bearer x"})
        assert not_blocked.status_code == 401
        # Its webhook budget (8/minute) is spent after two more; the API budget is not.
        for _ in range(2):
            httpx.post(webhook, content=body, headers={**forger, **paddle.signed_headers(body)})
        over = httpx.post(webhook, content=body, headers={**forger, **paddle.signed_headers(body)})
        assert over.status_code == 429
        assert over.json()["code"] == "RATE_LIMITED"
        valid = {**forger, **bearer(server.admin_key)}
        assert httpx.get(api(server), headers=valid).status_code == 200
