"""kubectl on a tenant's cluster with the tenant's own credentials, end to end on the bed.

A real `tenantplane serve` (kubernetes orchestrator) provisions the clusters through Flux and
the real vCluster chart; each tenant cluster is then a real kube-apiserver started exactly as
the chart values the platform wrote configure vCluster's (its extra arguments, and the host
Secrets its addVolumes mount: the encryption config and the token webhook's kubeconfig), with
the RBAC bindings of the values' ``experimental.deploy.vcluster.manifests`` applied. kubectl
(built at the bed's Kubernetes version) runs `tpctl token` from the kubeconfig `tpctl
kubeconfig` wrote; the API server asks serve's token webhook.
"""

from __future__ import annotations

import base64
import json
import os
import re
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import yaml
from lightkube import Client
from lightkube.resources.core_v1 import Secret

from tenantplane.cluster.tokens import Subject, TokenClaims, mint
from tenantplane.keys import KeyRing
from tenantplane.providers.kube import LABEL_CLUSTER_UID, HelmRelease
from tests.conftest import TEST_SECRET
from tests.contract.server import create_tenant, free_port
from tests.kubernetes.conftest import TESTBED, Bed
from tests.kubernetes.platform import Platform, platform_on, running_cluster
from tests.kubernetes.vcluster_stand_in import VClusterStandIn, as_manifest
from tests.oidc_provider import MockProvider

pytestmark = pytest.mark.kubernetes

TPCTL = str(Path(sys.executable).parent / "tpctl")
# The review cache of the API servers in this test (TENANTPLANE_CLUSTER_TOKEN_WEBHOOK_CACHE_TTL)
# and the bound a revoked credential's kubectl is refused within (docs/clusters.md: the TTL
# and kube-apiserver's own 10 s cache of successful authentications; vCluster's front adds
# 5 s, which a bare API server does not have).
CACHE_TTL_SECONDS = 2
REVOCATION_BOUND_SECONDS = CACHE_TTL_SECONDS + 10


@pytest.fixture
def platform(
    bed: Bed, stand_in: VClusterStandIn, oidc_provider: MockProvider, tmp_path: Path
) -> Iterator[Platform]:
    with platform_on(
        bed, oidc_provider, tmp_path, token_cache_ttl_seconds=CACHE_TTL_SECONDS
    ) as running:
        yield running


def as_vcluster(bed: Bed, kube: Client, tenant: str, cluster: str, port: int, home: Path) -> str:
    """A tenant API server on ``port`` configured as the chart values of ``cluster`` configure
    vCluster's; its URL."""
    namespace = f"tp-{tenant}"
    values = as_manifest(kube.get(HelmRelease, cluster, namespace=namespace))["spec"]["values"]
    control_plane = values["controlPlane"]
    persistence = control_plane["statefulSet"]["persistence"]
    mounts = {mount["name"]: mount["mountPath"] for mount in persistence["addVolumeMounts"]}
    args: list[str] = control_plane["distro"]["k8s"]["apiServer"]["extraArgs"]
    for volume in persistence["addVolumes"]:
        directory = home / volume["name"]
        directory.mkdir(parents=True)
        secret = kube.get(Secret, volume["secret"]["secretName"], namespace=namespace)
        for key, value in (secret.data or {}).items():
            (directory / key).write_bytes(base64.b64decode(value))
        args = [arg.replace(mounts[volume["name"]], str(directory)) for arg in args]
    name = f"{tenant}-{cluster}"
    started = subprocess.run(
        [TESTBED, "tenant-apiserver", bed.directory, name, str(port), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert started.returncode == 0, started.stderr
    url = f"https://127.0.0.1:{port}"
    admin = tenant_cluster_admin(bed)
    for manifest in yaml.safe_load_all(values["experimental"]["deploy"]["vcluster"]["manifests"]):
        plural = {"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings"}
        created = httpx.post(
            f"{url}/apis/rbac.authorization.k8s.io/v1/{plural[manifest['kind']]}",
            json=manifest,
            headers={"Authorization": f"Bearer {admin}"},
            verify=tenant_cluster_trust(bed),
        )
        assert created.status_code == 201, created.text
    return url


def cluster_uid(kube: Client, tenant: str, cluster: str) -> str:
    release = as_manifest(kube.get(HelmRelease, cluster, namespace=f"tp-{tenant}"))
    return str(release["metadata"]["labels"][LABEL_CLUSTER_UID])


def tenant_cluster_trust(bed: Bed) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=bed.directory / "tenant-cluster" / "pki" / "ca.crt")


def tenant_cluster_admin(bed: Bed) -> str:
    config = yaml.safe_load(bed.tenant_cluster_kubeconfig.read_text())
    return str(config["users"][0]["user"]["token"])


@dataclass(frozen=True)
class Caller:
    """A person or key with a HOME of its own: its tpctl profile, token cache, kubeconfig."""

    home: Path
    env: dict[str, str]

    @property
    def kubeconfig(self) -> Path:
        return self.home / "kubeconfig"

    def tpctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [TPCTL, *args], env=self.env, capture_output=True, text=True, timeout=60, check=False
        )

    def kubectl(self, bed: Bed, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(bed.directory / "bin" / "kubectl"), "--kubeconfig", str(self.kubeconfig), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )


def caller(platform: Platform, tenant: str, home: Path, **credential: str) -> Caller:
    """``credential``: TPCTL_API_KEY or TPCTL_TOKEN."""
    home.mkdir(parents=True)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "TPCTL_URL": platform.url,
        "TPCTL_TENANT": tenant,
        **credential,
    }
    return Caller(home, env)


def refused_within(
    seconds: float, bed: Bed, who: Caller, what: str
) -> subprocess.CompletedProcess[str]:
    deadline = time.monotonic() + seconds
    while True:
        result = who.kubectl(bed, "get", "namespaces")
        if result.returncode != 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)  # polling a condition with a deadline
    assert result.returncode != 0, f"{what}: kubectl still works after {seconds:g} s"
    assert "Unauthorized" in result.stderr, result.stderr
    return result


def anonymous_status(url: str, bed: Bed, token: str) -> int:
    response = httpx.get(
        f"{url}/api/v1/namespaces",
        headers={"Authorization": f"Bearer {token}"},
        verify=tenant_cluster_trust(bed),
    )
    return response.status_code


def token_of(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    token: str = json.loads(result.stdout)["status"]["token"]
    return token


def test_kubectl_with_tenant_credentials_on_clusters_configured_as_the_chart_values_say(
    bed: Bed, kube: Client, platform: Platform, oidc_provider: MockProvider, tmp_path: Path
) -> None:
    admin_key, _ = create_tenant(platform.env, "acme")
    other_key, _ = create_tenant(platform.env, "globex")
    readonly = platform.api(
        "POST", "/tenants/acme/apikeys", admin_key, json={"displayName": "ro", "role": "readonly"}
    )
    assert readonly.status_code == 201, readonly.text
    readonly_key, readonly_id = readonly.json()["key"], readonly.json()["id"]
    email = "dev@acme.example"
    for address in (email, "owner@acme.example"):  # the owner: a tenant keeps an admin
        added = platform.api(
            "POST", "/tenants/acme/members", admin_key, json={"email": address, "role": "admin"}
        )
        assert added.status_code == 201, added.text

    running_cluster(platform, "acme", admin_key, "c1")
    running_cluster(platform, "acme", admin_key, "c2")
    running_cluster(platform, "globex", other_key, "c1")
    acme_c1 = as_vcluster(bed, kube, "acme", "c1", platform.host_port, tmp_path / "acme-c1")
    globex_c1 = as_vcluster(bed, kube, "globex", "c1", free_port(), tmp_path / "globex-c1")

    admin = caller(platform, "acme", tmp_path / "admin", TPCTL_API_KEY=admin_key)
    viewer = caller(platform, "acme", tmp_path / "viewer", TPCTL_API_KEY=readonly_key)
    member = caller(
        platform, "acme", tmp_path / "member", TPCTL_TOKEN=oidc_provider.id_token(email)
    )
    for who in (admin, viewer, member):
        written = who.tpctl("kubeconfig", "c1", "--file", str(who.kubeconfig))
        assert written.returncode == 0, written.stderr
        listed = who.kubectl(bed, "get", "namespaces", "-o", "name")
        assert listed.returncode == 0, listed.stderr
        assert "namespace/kube-system" in listed.stdout.split()

    # Two kubectl calls in a row: one credentials request (tpctl keeps the token).
    before = platform.credentials_requests("acme", "c1")
    assert admin.kubectl(bed, "get", "namespaces").returncode == 0
    assert platform.credentials_requests("acme", "c1") == before

    # Admins administer the cluster; a readonly key reads only.
    assert admin.kubectl(bed, "create", "namespace", "by-admin").returncode == 0
    assert member.kubectl(bed, "create", "namespace", "by-member").returncode == 0
    forbidden = viewer.kubectl(bed, "create", "namespace", "by-viewer")
    assert forbidden.returncode != 0
    assert re.search(r"\(Forbidden\)|is forbidden", forbidden.stderr), forbidden.stderr
    assert f'User "apikey:{readonly_id}" cannot create resource' in forbidden.stderr

    # A token of one cluster on another of its tenant, or on another tenant's namesake: 401.
    acme_c2_token = token_of(admin.tpctl("token", "--tenant", "acme", "--cluster", "c2"))
    assert anonymous_status(acme_c1, bed, acme_c2_token) == 401
    acme_c1_token = token_of(admin.tpctl("token", "--tenant", "acme", "--cluster", "c1"))
    assert anonymous_status(acme_c1, bed, acme_c1_token) == 200
    assert anonymous_status(globex_c1, bed, acme_c1_token) == 401
    # An expired token, signed as the platform signs them.
    listed_keys = platform.api("GET", "/tenants/acme/apikeys", admin_key).json()["items"]
    past = datetime.now(UTC) - timedelta(seconds=1)
    claims = TokenClaims(
        cluster_uid(kube, "acme", "c1"), Subject.api_key, listed_keys[0]["id"], past
    )
    assert anonymous_status(acme_c1, bed, mint(KeyRing(TEST_SECRET.encode()), claims)) == 401

    # Revoked: the key's and the removed member's kubectl stop within the bound.
    revoked = platform.api("DELETE", f"/tenants/acme/apikeys/{readonly_id}", admin_key)
    assert revoked.status_code == 204, revoked.text
    refused_within(REVOCATION_BOUND_SECONDS, bed, viewer, "a revoked key")
    removed = platform.api("DELETE", f"/tenants/acme/members/{email}", admin_key)
    assert removed.status_code == 204, removed.text
    refused_within(REVOCATION_BOUND_SECONDS, bed, member, "a removed member")
    assert admin.kubectl(bed, "get", "namespaces").returncode == 0

    # The cluster's audit trail names the caller: here, its RBAC refusal did (above); the
    # webhook answered the real API server's reviews, and never failed.
    reviews = [
        json.loads(line)
        for line in platform.log.read_text(errors="replace").splitlines()
        if "/tokenreview" in line and line.startswith("{")
    ]
    assert reviews, "the API servers never called the token webhook"
    assert {entry["status"] for entry in reviews} == {200}
