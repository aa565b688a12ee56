"""The per-cluster Kubernetes auth mount against the fake vault, with the cluster's
kubeconfig Secret (vCluster's ``vc-<cluster>``) on the fake host cluster."""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import yaml

from tenantplane.providers.kube import Kube, client_for, load_kubeconfig
from tenantplane.providers.sync import ClusterRef
from tenantplane.providers.vault.cluster_auth import (
    ClusterAuthError,
    ClusterAuthSettings,
    VaultClusterAuth,
    policy_document,
)
from tenantplane.reconcile.fence import UNFENCED
from tests.fakes.kubernetes_fixtures import HostCluster
from tests.fakes.vault import FakeVault, serve

CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
REF = ClusterRef(uuid.uuid4().hex, "dev", "", "", tenant="acme")
SETTINGS = ClusterAuthSettings(
    mount_template="k8s-{uid}",
    role_template="tenant-{tenant}",
    kv_mount_template="tenant-{tenant}",
    kubernetes_host_template="",
    cluster_host_template="{cluster}.{tenant}.example.net",
    service_account="tenantplane-vault",
    service_account_namespace="tenantplane-system",
)


@pytest.fixture
def vault() -> Iterator[tuple[FakeVault, str]]:
    fake = FakeVault()
    with serve(fake) as address:
        yield fake, address


@pytest.fixture
async def host(host_cluster: HostCluster) -> AsyncIterator[Kube]:
    kube = Kube(client_for(load_kubeconfig(host_cluster.kubeconfig, None), 5.0))
    yield kube
    await kube.aclose()


async def write_kubeconfig_secret(host: Kube, server: str) -> None:
    config = {"clusters": [{"name": "dev", "cluster": {"server": server}}]}
    await host.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tp-acme"}})
    await host.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "vc-dev", "namespace": "tp-acme"},
            "data": {
                "config": base64.b64encode(yaml.safe_dump(config).encode()).decode(),
                "certificate-authority": base64.b64encode(CA.encode()).decode(),
            },
        }
    )


async def test_the_cluster_gets_its_own_mount_policy_and_role_and_loses_them(
    host: Kube, vault: tuple[FakeVault, str]
) -> None:
    fake, address = vault
    auth = VaultClusterAuth(host, address, fake.token, SETTINGS)
    with pytest.raises(ClusterAuthError, match="no kubeconfig yet"):
        await auth.ensure(REF, UNFENCED)
    await write_kubeconfig_secret(host, "https://dev.tp-acme:443")
    assert await auth.ensure(REF, UNFENCED) is True
    mount = fake.auth_mounts[f"k8s-{REF.uid}"]
    assert mount["type"] == "kubernetes"
    assert mount["config"]["kubernetes_host"] == "https://dev.tp-acme:443"
    assert mount["config"]["kubernetes_ca_cert"] == CA
    assert mount["config"]["disable_local_ca_jwt"] is True
    assert "token_reviewer_jwt" not in mount["config"]  # each login's JWT reviews itself
    role = mount["roles"]["tenant-acme"]
    assert role["bound_service_account_names"] == ["tenantplane-vault"]
    assert role["bound_service_account_namespaces"] == ["tenantplane-system"]
    assert role["token_policies"] == [f"k8s-{REF.uid}"]
    assert fake.policies[f"k8s-{REF.uid}"] == policy_document("tenant-acme")
    assert 'path "tenant-acme/data/*"' in policy_document("tenant-acme")

    writes = len([method for method, _ in fake.requests if method in {"POST", "PUT"}])
    assert await auth.ensure(REF, UNFENCED) is False  # read back equal: nothing written
    assert len([method for method, _ in fake.requests if method in {"POST", "PUT"}]) == writes

    await write_kubeconfig_secret(host, "https://dev.tp-acme:6443")  # drift is corrected
    assert await auth.ensure(REF, UNFENCED) is True
    assert mount["config"]["kubernetes_host"] == "https://dev.tp-acme:6443"

    assert await auth.remove(REF, UNFENCED) is True
    assert fake.auth_mounts == {}
    assert fake.policies == {}
    assert await auth.remove(REF, UNFENCED) is False
    await auth.aclose()


async def test_a_host_template_names_the_address_the_vault_uses(
    host: Kube, vault: tuple[FakeVault, str]
) -> None:
    fake, address = vault
    settings = ClusterAuthSettings(
        **{**SETTINGS.__dict__, "kubernetes_host_template": "https://{host}"}
    )
    auth = VaultClusterAuth(host, address, fake.token, settings)
    await write_kubeconfig_secret(host, "https://dev.tp-acme:443")
    await auth.ensure(REF, UNFENCED)
    config = fake.auth_mounts[f"k8s-{REF.uid}"]["config"]
    assert config["kubernetes_host"] == "https://dev.acme.example.net"
    await auth.aclose()


async def test_a_vault_failure_names_the_step_not_the_response(host: Kube) -> None:
    auth = VaultClusterAuth(host, "http://127.0.0.1:9", "token", SETTINGS)
    await write_kubeconfig_secret(host, "https://dev.tp-acme:443")
    with pytest.raises(ClusterAuthError, match=r"failed to list auth methods \(ConnectionError\)"):
        await auth.ensure(REF, UNFENCED)
    await auth.aclose()
