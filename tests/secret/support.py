"""Helpers of the secrets tests: wait for the reconciler, read the simulated clusters."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tenantplane.db.engine import Database
from tenantplane.providers.sync.simulator import SimulatorSyncProvider
from tests.http_client import bearer

DEADLINE_SECONDS = 60


async def wait_for_secret(
    client: httpx.AsyncClient,
    path: str,
    key: str,
    until: Callable[[dict[str, Any]], bool],
    what: str,
) -> dict[str, Any]:
    """Poll ``GET path`` until ``until(body)``; fail after a generous deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_SECONDS
    body: dict[str, Any] = {}
    while loop.time() < deadline:
        response = await client.get(path, headers=bearer(key))
        assert response.status_code == 200, response.text
        body = response.json()
        if until(body):
            return body
        await asyncio.sleep(0.05)
    pytest.fail(f"gave up after {DEADLINE_SECONDS}s waiting for {what}; last: {body}")


async def wait_for_phase(
    client: httpx.AsyncClient, path: str, key: str, phase: str
) -> dict[str, Any]:
    """Wait until the reconciler has observed the current spec and the phase is ``phase``."""

    def done(body: dict[str, Any]) -> bool:
        ready = condition(body, "Ready")
        return (
            body["status"]["phase"] == phase
            and ready is not None
            and ready["reason"] != "Reconciling"
        )

    return await wait_for_secret(client, path, key, done, f"phase {phase}")


async def wait_until(check: Callable[[], Any], what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_SECONDS
    while not await check():
        if loop.time() > deadline:
            pytest.fail(f"gave up after {DEADLINE_SECONDS}s waiting for {what}")
        await asyncio.sleep(0.05)


def condition(body: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in body["status"]["conditions"] if c["type"] == kind), None)


def target_statuses(body: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    return [
        (s["cluster"], s["namespace"], s["secretName"], s["phase"], s["reason"])
        for s in body["status"]["syncStatuses"]
    ]


async def copies_in(database: Database, cluster_uid: str) -> set[tuple[str, str]]:
    """(namespace, name) of every copy the simulator holds in the cluster."""
    provider = SimulatorSyncProvider(database)
    return {(copy.namespace, copy.name) for copy in await provider.copies(cluster_uid)}


async def all_copies(database: Database) -> list[tuple[str, str, str, str, str]]:
    provider = SimulatorSyncProvider(database)
    return [
        (copy.cluster_uid, copy.namespace, copy.name, copy.vault_mount, copy.secret_path)
        for copy in await provider.copies()
    ]
