"""The external-secrets sync provider through lightkube: the tenant cluster is reached with
the kubeconfig vCluster wrote into the host cluster (the fake serves as both), and a copy's
status is what External Secrets (the fake's controller) reports on its ExternalSecret."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from tenantplane.providers.kube import Kube, client_for, load_kubeconfig
from tenantplane.providers.orchestrator import ClusterSpec, Stage
from tenantplane.providers.orchestrator.kubernetes import ChartSettings, KubernetesOrchestrator
from tenantplane.providers.sync import ClusterRef, CopySpec, SyncError, SyncPending
from tenantplane.providers.sync.external_secrets import ExternalSecretsSync, StoreSettings
from tenantplane.reconcile.fence import UNFENCED
from tests.fakes.kubernetes_fixtures import HostCluster

CHART = ChartSettings("https://charts.loft.sh", "0.30.0", "{cluster}.{tenant}.example.net")
CLUSTER = ClusterSpec(
    uid=uuid.uuid4().hex,
    name="dev",
    tenant="acme",
    version="1.33",
    patch=5,
    high_availability=False,
    cpu="1",
    memory="1Gi",
    storage="10Gi",
)
REF = ClusterRef(CLUSTER.uid, "dev", "https://dev.acme.example.net:443", "", tenant="acme")
OWNER = uuid.uuid4().hex
COPY = CopySpec(
    tenant="acme",
    namespace="payments",
    name="db-creds",
    owner_uid=OWNER,
    vault_mount="tenant-acme",
    secret_path="prod/db",
)


@pytest.fixture
async def sync(host_cluster: HostCluster) -> AsyncIterator[ExternalSecretsSync]:
    kube = Kube(client_for(load_kubeconfig(host_cluster.kubeconfig, None), 5.0))
    orchestrator = KubernetesOrchestrator(kube, CHART)
    for _ in range(20):
        observed = await orchestrator.apply(CLUSTER, UNFENCED)
        if observed.settled:
            break
        host_cluster.controllers.step()
    assert observed.stage == Stage.ready
    settings = StoreSettings(
        vault_server="https://vault.example.net:8200",
        auth_mount_template="k8s-{tenant}-{uid}",
        role_template="tenant-{tenant}",
        refresh_interval="15m",
        server_template=host_cluster.url,  # the fake is the tenant cluster too
        host_template=CHART.host_template,
        timeout_seconds=5.0,
    )
    yield ExternalSecretsSync(kube, settings)
    await kube.aclose()


async def test_a_copy_is_pending_until_external_secrets_reports_it_synced(
    sync: ExternalSecretsSync, host_cluster: HostCluster
) -> None:
    with pytest.raises(SyncPending):
        await sync.apply(REF, COPY, UNFENCED)
    api = host_cluster.api
    store = api.get("ClusterSecretStore", "tenantplane-vault")
    assert store is not None
    vault = store["spec"]["provider"]["vault"]
    assert vault["server"] == "https://vault.example.net:8200"
    assert (vault["path"], vault["version"]) == ("tenant-acme", "v2")
    # The cluster's own auth mount, and a token requested for tenantplane's service account:
    # External Secrets may run outside any pod (docs/kubernetes.md).
    assert vault["auth"] == {
        "kubernetes": {
            "mountPath": f"k8s-acme-{CLUSTER.uid}",
            "role": "tenant-acme",
            "serviceAccountRef": {"name": "tenantplane-vault", "namespace": "tenantplane-system"},
        }
    }
    assert api.get("ServiceAccount", "tenantplane-vault", "tenantplane-system") is not None
    binding = api.get("ClusterRoleBinding", "tenantplane-vault-auth-delegator")
    assert binding is not None
    assert binding["roleRef"]["name"] == "system:auth-delegator"  # the vault reviews its JWT
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "tenantplane-vault", "namespace": "tenantplane-system"}
    ]
    external = api.get("ExternalSecret", "db-creds", "payments")
    assert external is not None
    assert external["metadata"]["labels"]["tenantplane.io/owner-uid"] == OWNER
    assert external["spec"]["refreshInterval"] == "15m"
    assert external["spec"]["secretStoreRef"] == {
        "kind": "ClusterSecretStore",
        "name": "tenantplane-vault",
    }
    assert external["spec"]["dataFrom"] == [{"extract": {"key": "prod/db"}}]
    assert external["spec"]["target"]["name"] == "db-creds"
    host_cluster.controllers.step()
    assert await sync.apply(REF, COPY, UNFENCED) is False  # synced, and nothing written again
    moved = CopySpec(**{**COPY.__dict__, "secret_path": "prod/db2"})
    with pytest.raises(SyncPending):  # External Secrets has not seen the new path yet
        await sync.apply(REF, moved, UNFENCED)
    host_cluster.controllers.step()
    assert await sync.apply(REF, moved, UNFENCED) is False


async def test_a_failing_external_secret_is_an_error_with_its_message(
    sync: ExternalSecretsSync, host_cluster: HostCluster
) -> None:
    host_cluster.controllers.set_external_secret(
        "payments", "db-creds", False, "could not get secret data from provider"
    )
    with pytest.raises(SyncPending):
        await sync.apply(REF, COPY, UNFENCED)
    host_cluster.controllers.step()
    with pytest.raises(SyncError, match="could not get secret data from provider"):
        await sync.apply(REF, COPY, UNFENCED)
    host_cluster.controllers.set_external_secret("payments", "db-creds", True, "synced")
    host_cluster.controllers.step()
    assert await sync.apply(REF, COPY, UNFENCED) is False


async def test_remove_deletes_only_its_own_external_secret(
    sync: ExternalSecretsSync, host_cluster: HostCluster
) -> None:
    with pytest.raises(SyncPending):
        await sync.apply(REF, COPY, UNFENCED)
    await sync.remove(REF, "payments", "db-creds", uuid.uuid4().hex, UNFENCED)  # not the owner
    assert host_cluster.api.get("ExternalSecret", "db-creds", "payments") is not None
    await sync.remove(REF, "payments", "db-creds", OWNER, UNFENCED)
    assert host_cluster.api.get("ExternalSecret", "db-creds", "payments") is None
    await sync.remove(REF, "payments", "db-creds", OWNER, UNFENCED)  # idempotent


async def test_a_cluster_without_its_kubeconfig_yet_is_pending(
    sync: ExternalSecretsSync,
) -> None:
    other = ClusterRef(uuid.uuid4().hex, "prod", "", "", tenant="acme")
    with pytest.raises(SyncPending, match="no kubeconfig yet"):
        await sync.apply(other, COPY, UNFENCED)
