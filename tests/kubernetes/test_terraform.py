"""The OpenTofu provider against serve provisioning on the bed: a cluster created, planned with
nothing to do, imported into an empty state, resized and destroyed, each step through Flux and
the real vCluster chart, each apply returning once the host runs what it asked for."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Namespace

from tenantplane.providers.kube import HelmRelease
from tests.contract.server import create_tenant
from tests.kubernetes.conftest import Bed
from tests.kubernetes.platform import CLUSTER_DEADLINE, Platform, platform_on
from tests.kubernetes.polling import eventually, gone
from tests.kubernetes.vcluster_stand_in import VClusterStandIn
from tests.oidc_provider import MockProvider
from tests.terraform.conftest import Tenant, Tofu, build_provider

pytestmark = pytest.mark.kubernetes


@pytest.fixture
def platform(
    bed: Bed, stand_in: VClusterStandIn, oidc_provider: MockProvider, tmp_path: Path
) -> Iterator[Platform]:
    with platform_on(bed, oidc_provider, tmp_path, token_cache_ttl_seconds=10) as running:
        yield running


def web(cpu: str, memory: str) -> str:
    return f"""
resource "tenantplane_cluster" "web" {{
  name      = "web"
  resources = {{ cpu = "{cpu}", memory = "{memory}", storage = "5Gi" }}
}}
"""


def syncer_cpu_limit(kube: Client, namespace: str) -> str:
    """The control plane's CPU limit as Helm released it (3/8 of the cluster's CPU)."""
    deployment = kube.get(Deployment, "web", namespace=namespace)
    assert deployment.spec is not None
    assert deployment.spec.template.spec is not None
    (syncer,) = [c for c in deployment.spec.template.spec.containers if c.name == "syncer"]
    assert syncer.resources is not None
    assert syncer.resources.limits is not None
    return str(syncer.resources.limits["cpu"])


def test_the_provider_creates_imports_resizes_and_destroys_a_cluster_on_the_bed(
    kube: Client, platform: Platform, tmp_path: Path
) -> None:
    key, _ = create_tenant(platform.env, "tofu")
    tenant = Tenant(platform.url, "tofu", key)
    namespace = "tp-tofu"
    workdir = tmp_path / "config"
    workdir.mkdir()
    tofu = Tofu(workdir, build_provider(), tenant)

    tofu.configure(web(cpu="1", memory="2Gi"))
    tofu.ok("apply", "-auto-approve", "-input=false")
    cluster = tenant.read("/clusters/web")
    assert cluster is not None
    assert cluster["status"]["phase"] == "Running"
    assert syncer_cpu_limit(kube, namespace) == "375m"
    assert tofu.plan_exit_code() == 0

    (workdir / "terraform.tfstate").unlink()
    tofu.ok("import", "tenantplane_cluster.web", "web")
    assert tofu.plan_exit_code() == 0

    # The apply of a resize returns once Flux released the new share and the cluster runs.
    tofu.configure(web(cpu="2", memory="4Gi"))
    tofu.ok("apply", "-auto-approve", "-input=false")
    cluster = tenant.read("/clusters/web")
    assert cluster is not None
    assert cluster["resources"] == {"cpu": "2", "memory": "4Gi", "storage": "5Gi"}
    assert cluster["status"]["phase"] == "Running"
    assert syncer_cpu_limit(kube, namespace) == "750m"
    assert tofu.plan_exit_code() == 0

    # Destroy returns once the API says 404; the host keeps nothing of it.
    tofu.ok("destroy", "-auto-approve", "-input=false")
    assert tenant.read("/clusters/web") is None
    eventually(
        gone(partial(kube.get, HelmRelease, "web", namespace=namespace)),
        "the HelmRelease gone",
        CLUSTER_DEADLINE,
    )
    eventually(
        gone(partial(kube.get, Namespace, namespace)), "the namespace gone", CLUSTER_DEADLINE
    )
    assert tofu.state_list() == []
