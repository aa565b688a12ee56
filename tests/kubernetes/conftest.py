"""The Kubernetes test bed: real etcd, kube-apiserver, kube-controller-manager, kube-scheduler
and kwok (nodes and kubelets played without containers), Flux's source-controller and
helm-controller and a Helm repository serving the vCluster chart, started once per test session
by ``scripts/testbed`` and stopped at its end.

These tests are marked ``kubernetes`` and left out of ``make test`` (pyproject's addopts
deselect them); ``make test-kubernetes`` builds the bed once into a cache and runs them.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from lightkube import AsyncClient, Client, KubeConfig

from tenantplane.providers.kube import Kube, client_for, load_kubeconfig

if TYPE_CHECKING:
    from tests.kubernetes.vcluster_stand_in import VClusterStandIn

TESTBED = Path(__file__).resolve().parents[2] / "scripts" / "testbed"
FIELD_MANAGER = "tenantplane-tests"

# Start-up takes 10-20 s; a minute more is a bed that is not coming.
START_TIMEOUT = 120


@dataclass(frozen=True)
class Bed:
    """A running bed: its directory holds the admin's kubeconfig, the certificates and each
    component's log (``logs/<component>.log``)."""

    directory: Path

    @property
    def kubeconfig(self) -> Path:
        return self.directory / "kubeconfig"

    @property
    def chart_repository(self) -> str:
        """The URL of the loopback Helm repository that serves the vCluster chart."""
        return (self.directory / "chart-repository").read_text().strip()

    @property
    def tenant_cluster_kubeconfig(self) -> Path:
        """The stand-in tenant cluster's admin (scripts/testbed-secrets.sh)."""
        return self.directory / "tenant-cluster" / "kubeconfig"

    @property
    def openbao_address(self) -> str:
        return (self.directory / "openbao" / "address").read_text().strip()

    @property
    def openbao_token(self) -> str:
        """The dev server's root token."""
        return (self.directory / "openbao" / "token").read_text().strip()

    def client(self) -> Client:
        return Client(config=KubeConfig.from_file(self.kubeconfig), field_manager=FIELD_MANAGER)

    def async_client(self) -> AsyncClient:
        return AsyncClient(
            config=KubeConfig.from_file(self.kubeconfig), field_manager=FIELD_MANAGER
        )


@pytest.fixture(scope="session")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    directory = tmp_path_factory.mktemp("testbed")
    # The bed's processes run in sessions of their own, outside this one: if this process is
    # killed before it stops them, the bed's watchdog does, on seeing this pid gone.
    environment = {**os.environ, "TENANTPLANE_TESTBED_OWNER": str(os.getpid())}
    try:
        started = subprocess.run(
            [TESTBED, "start", directory],
            env=environment,
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT,
            check=False,
        )
        if started.returncode != 0:
            # The script names the command that builds a missing binary, or shows the log of
            # the component that did not come up.
            pytest.fail(f"the test bed did not start:\n{started.stderr}", pytrace=False)
        yield Bed(directory)
    finally:
        subprocess.run([TESTBED, "stop", directory], check=True, timeout=120)


@pytest.fixture
def stand_in(bed: Bed) -> Iterator[VClusterStandIn]:
    """vCluster's kubeconfig Secret written for every release whose control plane is up."""
    from tests.kubernetes.vcluster_stand_in import VClusterStandIn

    with VClusterStandIn(bed) as running:
        yield running


@pytest.fixture
def kube(bed: Bed) -> Iterator[Client]:
    """The bed's admin, synchronous (for the tests' own looks and changes)."""
    with bed.client() as client:
        yield client


@pytest.fixture
async def host(bed: Bed) -> AsyncIterator[Kube]:
    """The bed as the platform reaches a host cluster."""
    kube = Kube(client_for(load_kubeconfig(bed.kubeconfig, None), 10.0))
    yield kube
    await kube.aclose()
