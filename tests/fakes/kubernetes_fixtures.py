"""Fixtures: the fake Kubernetes API server on loopback, its controllers, and a kubeconfig."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.kubernetes import FakeFluxVCluster, FakeKubernetes, kubeconfig_yaml, serve
from tests.http_client import bearer


@dataclass
class HostCluster:
    api: FakeKubernetes
    controllers: FakeFluxVCluster
    url: str
    kubeconfig: Path


@pytest.fixture
def host_cluster(tmp_path: Path) -> Iterator[HostCluster]:
    api = FakeKubernetes()
    with serve(api) as url:
        path = tmp_path / "kubeconfig"
        path.write_text(kubeconfig_yaml(url, context="host"), encoding="utf-8")
        yield HostCluster(api, FakeFluxVCluster(api), url, path)


# Enough steps for a three-replica cluster to come up, one replica per step, and go.
MAX_LOOKS = 400


Check = Callable[[httpx.Response], bool]


async def drive(
    client: httpx.AsyncClient,
    host: HostCluster,
    path: str,
    key: str,
    until: Check,
    what: str,
) -> list[dict[str, Any]]:
    """Step the controllers, look at the cluster, until ``until``: the statuses seen."""
    seen: list[dict[str, Any]] = []
    for _ in range(MAX_LOOKS):
        response = await client.get(path, headers=bearer(key))
        if response.status_code == 200:
            seen.append(response.json()["status"])
        if until(response):
            return seen
        host.controllers.step()
        await _let_the_reconciler_run()
    pytest.fail(f"never saw {what}; last: {seen[-1:] or response.text}")


async def _let_the_reconciler_run() -> None:
    await asyncio.sleep(0.03)
