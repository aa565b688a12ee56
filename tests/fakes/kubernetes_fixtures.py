"""Fixtures: the fake Kubernetes API server on loopback, its controllers, and a kubeconfig."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fakes.kubernetes import FakeFluxVCluster, FakeKubernetes, kubeconfig_yaml, serve


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
