"""Secret sync on the bed: real External Secrets in a stand-in tenant cluster logs in to a real
OpenBao with Kubernetes auth and copies a tenant's KV v2 secret into a Kubernetes Secret."""

from __future__ import annotations

import asyncio
import base64
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import hvac
import pytest
import yaml

from tenantplane.providers.kube import Kube, client_for, condition, load_kubeconfig
from tenantplane.providers.sync import ClusterRef, CopySpec, SyncError, SyncPending
from tenantplane.providers.sync.external_secrets import ExternalSecretsSync, StoreSettings
from tenantplane.reconcile.fence import UNFENCED
from tests.kubernetes.conftest import Bed

pytestmark = pytest.mark.kubernetes

T = TypeVar("T")


@pytest.fixture
async def host(bed: Bed) -> AsyncIterator[Kube]:
    kube = Kube(client_for(load_kubeconfig(bed.kubeconfig, None), 10.0))
    yield kube
    await kube.aclose()


@pytest.fixture
def openbao(bed: Bed) -> hvac.Client:
    return hvac.Client(url=bed.openbao_address, token=bed.openbao_token)


async def stand_in_vcluster(bed: Bed, host: Kube, tenant: str, cluster: str) -> None:
    """Write ``vc-<cluster>`` into ``tp-<tenant>`` as vCluster does (loft-sh/vcluster
    pkg/util/kubeconfig/kubeconfig.go): ``config``, a kubeconfig whose server is the tenant
    cluster's API, and ``certificate-authority``, its CA. vCluster's user is a client
    certificate; the stand-in's admin is a token."""
    config = yaml.safe_load(bed.tenant_cluster_kubeconfig.read_text())
    authority = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"])
    await host.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"tp-{tenant}"}}
    )
    await host.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"vc-{cluster}", "namespace": f"tp-{tenant}"},
            "data": {
                "config": base64.b64encode(yaml.safe_dump(config).encode()).decode(),
                "certificate-authority": base64.b64encode(authority).decode(),
            },
        }
    )


async def until(call: Callable[[], Awaitable[T]], what: str, seconds: float = 60) -> T:
    """Calls ``call`` until it stops raising SyncPending; returns its result."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return await call()
        except SyncPending as pending:
            if time.monotonic() > deadline:
                raise AssertionError(f"not within {seconds:g} s: {what} ({pending})") from None
        await asyncio.sleep(0.5)


async def store_ready(bed: Bed) -> dict[str, Any]:
    """The Ready condition of the ClusterSecretStore in the stand-in tenant cluster."""
    tenant_cluster = Kube(client_for(load_kubeconfig(bed.tenant_cluster_kubeconfig, None), 10.0))
    try:
        store = await tenant_cluster.get("ClusterSecretStore", "tenantplane-vault")
    finally:
        await tenant_cluster.aclose()
    assert store is not None
    return condition(store, "Ready")


def kv2(openbao: hvac.Client, mount: str) -> None:
    mounts: dict[str, Any] = openbao.sys.list_mounted_secrets_engines()["data"]
    if f"{mount}/" not in mounts:
        openbao.sys.enable_secrets_engine("kv", path=mount, options={"version": "2"})


async def test_a_shared_mount_and_no_service_account_ref_cannot_log_in(
    bed: Bed, host: Kube, openbao: hvac.Client
) -> None:
    """Finding 5 of issue 34, as the code stood: one shared Kubernetes auth mount and a store
    without ``serviceAccountRef``: External Secrets outside a pod has no token to log in with."""
    tenant, cluster = "shared", "dev"
    await stand_in_vcluster(bed, host, tenant, cluster)
    kv2(openbao, f"tenant-{tenant}")
    openbao.secrets.kv.v2.create_or_update_secret(
        "app/db", {"password": "one"}, mount_point=f"tenant-{tenant}"
    )
    sync = ExternalSecretsSync(
        host,
        StoreSettings(
            vault_server=bed.openbao_address,
            auth_mount="kubernetes",
            role_template="tenant-{tenant}",
            refresh_interval="5s",
            server_template="",
            host_template="{cluster}-{tenant}.example.net",
            timeout_seconds=10.0,
        ),
    )
    ref = ClusterRef(uuid.uuid4().hex, cluster, "", "", tenant=tenant)
    copy = CopySpec(tenant, "shared-app", "db", uuid.uuid4().hex, f"tenant-{tenant}", "app/db")
    with pytest.raises(SyncError) as failed:
        await until(lambda: sync.apply(ref, copy, UNFENCED), "External Secrets reports")
    store = await store_ready(bed)
    print(f"pre-fix failure: {failed.value}; ClusterSecretStore: {store.get('message')}")
    await sync.remove(ref, copy.namespace, copy.name, copy.owner_uid, UNFENCED)
