"""Waiting for asynchronous outcomes over HTTP, with a bounded deadline (not a timing
assertion: the deadline only turns a hang into a clear failure)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest

DEADLINE_SECONDS = 60.0


async def poll(
    client: httpx.AsyncClient,
    path: str,
    headers: dict[str, str],
    until: Callable[[httpx.Response], bool],
    what: str,
    *,
    deadline: float = DEADLINE_SECONDS,
    interval: float = 0.02,
) -> httpx.Response:
    loop = asyncio.get_running_loop()
    give_up = loop.time() + deadline
    while True:
        response = await client.get(path, headers=headers)
        if until(response):
            return response
        if loop.time() > give_up:
            pytest.fail(f"gave up after {deadline:.0f}s waiting for {what}; last: {response.text}")
        await asyncio.sleep(interval)


def phase_is(*phases: str) -> Callable[[httpx.Response], bool]:
    def check(response: httpx.Response) -> bool:
        return response.status_code == 200 and response.json()["status"]["phase"] in phases

    return check


def status_matches(**expected: Any) -> Callable[[httpx.Response], bool]:
    def check(response: httpx.Response) -> bool:
        if response.status_code != 200:
            return False
        status = response.json()["status"]
        return all(status.get(key) == value for key, value in expected.items())

    return check


def gone(response: httpx.Response) -> bool:
    return response.status_code == 404


async def create_cluster(
    client: httpx.AsyncClient, tenant_path: str, key: str, name: str, **fields: Any
) -> httpx.Response:
    response = await client.post(
        f"{tenant_path}/clusters",
        json={"name": name, **fields},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 201, response.text
    return response


async def wait_running(
    client: httpx.AsyncClient, tenant_path: str, key: str, name: str
) -> dict[str, Any]:
    response = await poll(
        client,
        f"{tenant_path}/clusters/{name}",
        {"Authorization": f"Bearer {key}"},
        phase_is("Running"),
        f"cluster {name} Running",
    )
    body: dict[str, Any] = response.json()
    return body
