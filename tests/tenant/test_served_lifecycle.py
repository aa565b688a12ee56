"""The tenant lifecycle against a real `tenantplane serve` process, driven by the real
operator command: a cancelled tenant's admin key can no longer create clusters or keys but
still reads its invoices, and its HA cluster is torn down; a suspended tenant is read-only
until resumed; an operator gives a tenant a new admin key that works at once."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.contract.server import TENANTPLANE, Served, create_tenant, served, server_env

DEADLINE_SECONDS = 60.0


def operator(tmp_path: Path, *args: str) -> dict[str, Any]:
    """Run the real command against the server's database; its one JSON object."""
    result = subprocess.run(
        [TENANTPLANE, *args, "--json"], env=server_env(tmp_path), capture_output=True, check=False
    )
    assert result.returncode == 0, result.stderr.decode()
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def wait_until(
    client: httpx.Client, path: str, done: Callable[[httpx.Response], bool], what: str
) -> httpx.Response:
    give_up = time.monotonic() + DEADLINE_SECONDS
    while True:
        response = client.get(path)
        if done(response):
            return response
        if time.monotonic() > give_up:
            pytest.fail(f"gave up waiting for {what}; last: {response.text}")
        time.sleep(0.05)  # polling a condition with a deadline


def api(server: Served, key: str) -> httpx.Client:
    return httpx.Client(
        base_url=f"{server.base_url}/api/v1/tenants",
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )


def refusal(response: httpx.Response) -> tuple[int, str | None]:
    return response.status_code, response.json().get("code")


def test_cancel_suspend_and_recover_against_a_real_server(tmp_path: Path) -> None:
    with served(tmp_path, tenant="beta") as server, api(server, server.admin_key) as beta:
        created = beta.post("/beta/clusters", json={"name": "prod", "highAvailability": True})
        assert created.status_code == 201, created.text
        wait_until(
            beta,
            "/beta/clusters/prod",
            lambda r: r.json()["status"]["haConfigured"] is True,
            "the HA cluster",
        )

        report = operator(tmp_path, "tenant", "cancel", "beta")
        assert report["clustersDeleted"] == ["prod"]
        assert refusal(beta.post("/beta/clusters", json={"name": "late"})) == (
            403,
            "TENANT_CANCELLED",
        )
        key = beta.post("/beta/apikeys", json={"displayName": "late", "role": "admin"})
        assert refusal(key) == (403, "TENANT_CANCELLED")
        invoices = beta.get("/beta/invoices")
        assert invoices.status_code == 200
        assert [item["name"] for item in invoices.json()["items"]] == [report["final"]]
        assert beta.get("/beta").json()["state"] == "cancelled"
        wait_until(beta, "/beta/clusters/prod", lambda r: r.status_code == 404, "the teardown")

        env = server_env(tmp_path)
        gamma_key, _ = create_tenant(env, "gamma")
        with api(server, gamma_key) as gamma:
            assert operator(tmp_path, "tenant", "suspend", "gamma")["state"] == "suspended"
            refused = gamma.post("/gamma/clusters", json={"name": "app"})
            assert refusal(refused) == (403, "TENANT_SUSPENDED")
            assert gamma.get("/gamma/clusters").status_code == 200
            assert operator(tmp_path, "tenant", "resume", "gamma")["state"] == "active"
            assert gamma.post("/gamma/clusters", json={"name": "app"}).status_code == 201

        recovered = operator(tmp_path, "apikey", "create", "gamma", "--role", "admin")
        with api(server, recovered["apiKey"]["key"]) as admin:
            made = admin.post("/gamma/apikeys", json={"displayName": "ci", "role": "readonly"})
            assert made.status_code == 201, made.text
        member = operator(tmp_path, "member", "add", "gamma", "ops@example.com", "--role", "admin")
        assert member["member"] == {"email": "ops@example.com", "role": "admin"}
