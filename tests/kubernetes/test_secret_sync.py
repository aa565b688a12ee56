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
from tenantplane.providers.sync import ClusterRef, CopySpec, SyncError
from tenantplane.providers.sync.external_secrets import ExternalSecretsSync, StoreSettings
from tenantplane.providers.vault.cluster_auth import ClusterAuthSettings, VaultClusterAuth
from tenantplane.reconcile.fence import UNFENCED
from tests.kubernetes.conftest import Bed

pytestmark = pytest.mark.kubernetes

T = TypeVar("T")
SERVICE_ACCOUNT, SERVICE_ACCOUNT_NAMESPACE = "tenantplane-vault", "tenantplane-system"


@pytest.fixture
def openbao(bed: Bed) -> hvac.Client:
    return hvac.Client(url=bed.openbao_address, token=bed.openbao_token)


@pytest.fixture
async def tenant_cluster(bed: Bed) -> AsyncIterator[Kube]:
    kube = Kube(client_for(load_kubeconfig(bed.tenant_cluster_kubeconfig, None), 10.0))
    yield kube
    await kube.aclose()


@pytest.fixture
async def auth(bed: Bed, host: Kube) -> AsyncIterator[VaultClusterAuth]:
    settings = ClusterAuthSettings(
        mount_template="k8s-{uid}",
        role_template="tenant-{tenant}",
        kv_mount_template="tenant-{tenant}",
        kubernetes_host_template="",  # OpenBao reaches the stand-in at its kubeconfig's server
        cluster_host_template="{cluster}.{tenant}.example.net",
        service_account=SERVICE_ACCOUNT,
        service_account_namespace=SERVICE_ACCOUNT_NAMESPACE,
    )
    auth = VaultClusterAuth(host, bed.openbao_address, bed.openbao_token, settings)
    yield auth
    await auth.aclose()


@pytest.fixture
def sync(bed: Bed, host: Kube) -> ExternalSecretsSync:
    return ExternalSecretsSync(
        host,
        StoreSettings(
            vault_server=bed.openbao_address,
            auth_mount_template="k8s-{uid}",
            role_template="tenant-{tenant}",
            refresh_interval="2s",
            server_template="",
            host_template="{cluster}.{tenant}.example.net",
            timeout_seconds=10.0,
            service_account=SERVICE_ACCOUNT,
            service_account_namespace=SERVICE_ACCOUNT_NAMESPACE,
        ),
    )


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
    """Calls ``call`` until it stops raising SyncError, as the secret reconciler retries a
    target: the first pass may find the ExternalSecret failed because External Secrets
    looked at it before it had validated the new ClusterSecretStore ("is not ready")."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return await call()
        except SyncError as error:
            if time.monotonic() > deadline:
                raise AssertionError(f"not within {seconds:g} s: {what} ({error})") from None
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


async def eventually(check: Callable[[], Awaitable[T | None]], what: str, seconds: float = 60) -> T:
    deadline = time.monotonic() + seconds
    while (result := await check()) is None:
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds:g} s: {what}")
        await asyncio.sleep(0.5)
    return result


async def secret_data(kube: Kube, namespace: str, name: str) -> dict[str, str] | None:
    secret = await kube.get("Secret", name, namespace)
    if secret is None:
        return None
    return {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}


async def test_without_service_account_ref_external_secrets_outside_a_pod_cannot_log_in(
    bed: Bed, host: Kube, tenant_cluster: Kube, openbao: hvac.Client
) -> None:
    """Finding 5 of issue 34: the store the provider wrote before, on one shared auth mount
    and without ``serviceAccountRef``. External Secrets outside a pod has no token of its own
    to log in with (it reads the pod's token file), whatever that mount would allow."""
    await tenant_cluster.apply(
        {
            "apiVersion": "external-secrets.io/v1",
            "kind": "ClusterSecretStore",
            "metadata": {"name": "shared-mount"},
            "spec": {
                "provider": {
                    "vault": {
                        "server": bed.openbao_address,
                        "path": "tenant-shared",
                        "version": "v2",
                        "auth": {
                            "kubernetes": {"mountPath": "kubernetes", "role": "tenant-shared"}
                        },
                    }
                }
            },
        }
    )

    async def failed() -> str | None:
        store = await tenant_cluster.get("ClusterSecretStore", "shared-mount")
        ready = condition(store or {}, "Ready")
        return ready.get("message") if ready.get("status") == "False" else None

    assert await eventually(failed, "the store fails") == "unable to create client"
    log = (bed.directory / "logs" / "external-secrets.log").read_text()
    assert "cannot read Kubernetes service account token from file system" in log
    await tenant_cluster.delete("ClusterSecretStore", "shared-mount")


async def test_a_secret_reaches_the_cluster_through_its_own_auth_mount(
    bed: Bed,
    host: Kube,
    tenant_cluster: Kube,
    openbao: hvac.Client,
    auth: VaultClusterAuth,
    sync: ExternalSecretsSync,
) -> None:
    tenant, cluster = "acme", "dev"
    ref = ClusterRef(uuid.uuid4().hex, cluster, "", "", tenant=tenant)
    await stand_in_vcluster(bed, host, tenant, cluster)
    kv2(openbao, f"tenant-{tenant}")
    openbao.secrets.kv.v2.create_or_update_secret(
        "app/db", {"password": "one"}, mount_point=f"tenant-{tenant}"
    )
    assert await auth.ensure(ref, UNFENCED) is True  # at provisioning
    assert await auth.ensure(ref, UNFENCED) is False  # read back equal: nothing written
    mount = f"k8s-{ref.uid}"
    config = openbao.read(f"auth/{mount}/config")["data"]
    assert config["kubernetes_host"].startswith("https://127.0.0.1:")
    assert config["disable_local_ca_jwt"] is True

    copy = CopySpec(tenant, "payments", "db-creds", uuid.uuid4().hex, f"tenant-{tenant}", "app/db")
    assert await until(lambda: sync.apply(ref, copy, UNFENCED), "the copy is synced") is False
    assert await secret_data(tenant_cluster, "payments", "db-creds") == {"password": "one"}
    store = await tenant_cluster.get("ClusterSecretStore", "tenantplane-vault")
    assert store is not None
    assert store["spec"]["provider"]["vault"]["auth"]["kubernetes"] == {
        "mountPath": mount,
        "role": "tenant-acme",
        "serviceAccountRef": {"name": SERVICE_ACCOUNT, "namespace": SERVICE_ACCOUNT_NAMESPACE},
    }

    started = time.monotonic()
    openbao.secrets.kv.v2.create_or_update_secret(
        "app/db", {"password": "two"}, mount_point=f"tenant-{tenant}"
    )

    async def updated() -> bool | None:
        data = await secret_data(tenant_cluster, "payments", "db-creds")
        return True if data == {"password": "two"} else None

    await eventually(updated, "the update reaches the cluster")
    print(f"update propagated in {time.monotonic() - started:.1f} s")

    await sync.remove(ref, "payments", "db-creds", copy.owner_uid, UNFENCED)

    async def deleted() -> bool | None:
        return True if await tenant_cluster.get("Secret", "db-creds", "payments") is None else None

    await eventually(deleted, "the copy's Secret is deleted with its ExternalSecret")

    assert await auth.remove(ref, UNFENCED) is True  # at deletion
    assert f"{mount}/" not in openbao.sys.list_auth_methods()["data"]
    assert mount not in openbao.sys.list_acl_policies()["data"]["keys"]
    assert await auth.remove(ref, UNFENCED) is False


async def test_another_tenants_cluster_cannot_read_the_first_tenants_path(
    bed: Bed,
    host: Kube,
    tenant_cluster: Kube,
    openbao: hvac.Client,
    auth: VaultClusterAuth,
    sync: ExternalSecretsSync,
) -> None:
    first = ClusterRef(uuid.uuid4().hex, "prod", "", "", tenant="first")
    second = ClusterRef(uuid.uuid4().hex, "prod", "", "", tenant="second")
    for ref in (first, second):
        await stand_in_vcluster(bed, host, ref.tenant, ref.name)
        kv2(openbao, f"tenant-{ref.tenant}")
        openbao.secrets.kv.v2.create_or_update_secret(
            "app/key", {"key": ref.tenant}, mount_point=f"tenant-{ref.tenant}"
        )
        await auth.ensure(ref, UNFENCED)
    copy = CopySpec("second", "app", "key", uuid.uuid4().hex, "tenant-second", "app/key")
    await until(lambda: sync.apply(second, copy, UNFENCED), "the second tenant's copy")
    assert await secret_data(tenant_cluster, "app", "key") == {"key": "second"}

    # OpenBao: a login through the second cluster's mount reads the second tenant's path only.
    token = await service_account_token(tenant_cluster)
    client = hvac.Client(url=bed.openbao_address)
    client.auth.kubernetes.login("tenant-second", token, mount_point=f"k8s-{second.uid}")
    assert client.secrets.kv.v2.read_secret_version(
        "app/key", mount_point="tenant-second", raise_on_deleted_version=True
    )["data"]["data"] == {"key": "second"}
    with pytest.raises(hvac.exceptions.Forbidden) as denied:
        client.secrets.kv.v2.read_secret_version(
            "app/key", mount_point="tenant-first", raise_on_deleted_version=True
        )
    print(f"OpenBao: {denied.value}")
    with pytest.raises(hvac.exceptions.InvalidRequest):  # its role is not in that mount
        hvac.Client(url=bed.openbao_address).auth.kubernetes.login(
            "tenant-second", token, mount_point=f"k8s-{first.uid}"
        )

    # External Secrets: the second cluster's store pointed at the first tenant's mount.
    store = sync.secret_store(second, copy)
    store["metadata"]["name"] = "second-at-first"
    store["spec"]["provider"]["vault"]["path"] = "tenant-first"
    await tenant_cluster.apply(store)
    stolen = sync.external_secret(copy)
    stolen["metadata"]["name"] = stolen["spec"]["target"]["name"] = "stolen"
    stolen["spec"]["secretStoreRef"]["name"] = "second-at-first"
    await tenant_cluster.apply(stolen)

    async def refused() -> str | None:
        # Not the first failure: that may be "store is not ready" (validated after the
        # ExternalSecret was first looked at), as in the test above.
        log = (bed.directory / "logs" / "external-secrets.log").read_text()
        denied = [
            line for line in log.splitlines() if "stolen" in line and "permission denied" in line
        ]
        return denied[0] if denied else None

    refusal = await eventually(refused, "External Secrets is refused")
    print(f"External Secrets: {refusal[:400]}")
    found = await tenant_cluster.get("ExternalSecret", "stolen", "app")
    assert condition(found or {}, "Ready").get("status") == "False"
    assert await tenant_cluster.get("Secret", "stolen", "app") is None
    await tenant_cluster.delete("ExternalSecret", "stolen", "app")
    await tenant_cluster.delete("ClusterSecretStore", "second-at-first")
    await sync.remove(second, "app", "key", copy.owner_uid, UNFENCED)
    for ref in (first, second):
        await auth.remove(ref, UNFENCED)


async def service_account_token(tenant_cluster: Kube) -> str:
    """A token for the login service account, requested as External Secrets does."""
    from lightkube.models.authentication_v1 import TokenRequestSpec
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.core_v1 import ServiceAccount

    request = ServiceAccount.Token(
        metadata=ObjectMeta(name=SERVICE_ACCOUNT, namespace=SERVICE_ACCOUNT_NAMESPACE),
        spec=TokenRequestSpec(audiences=[], expirationSeconds=600),
    )
    created = await tenant_cluster.client.create(
        request, SERVICE_ACCOUNT, namespace=SERVICE_ACCOUNT_NAMESPACE
    )
    assert created.status is not None
    return str(created.status.token)
