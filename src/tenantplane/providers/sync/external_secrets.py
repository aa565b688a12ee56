"""The ``external-secrets`` sync provider: External Secrets inside each tenant cluster.

A tenant cluster (a vCluster) is reached through the kubeconfig vCluster writes into the
host cluster (Secret ``vc-<cluster>`` in ``tp-<tenant>``). In it, per tenant, one
``ClusterSecretStore`` points at the tenant's KV v2 mount of the vault and logs in with
Kubernetes auth through the cluster's own auth mount (``providers/vault/cluster_auth.py``)
under the tenant's role, with a token External Secrets requests (TokenRequest) for the service
account it names (``serviceAccountRef``: External Secrets may run outside any pod, and its own
account is not the one the role binds); tenantplane creates that account and lets it review
tokens (``system:auth-delegator``: the vault has it review its own). Per copy, an
``ExternalSecret`` in the target
namespace names the vault path and the Secret to write. External Secrets then fetches the
value itself: no value passes through tenantplane. The copy's status is the
ExternalSecret's ``Ready`` condition. docs/kubernetes.md.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tenantplane.providers.kube import (
    LABEL_MANAGED_BY,
    LABEL_OWNER_UID,
    LABEL_TENANT,
    Kube,
    Manifest,
    condition,
    kubeconfig_client,
    tenant_namespace,
)
from tenantplane.providers.sync import ClusterRef, CopySpec, SyncError, SyncPending
from tenantplane.providers.vault.cluster_auth import auth_mount, vcluster_kubeconfig
from tenantplane.reconcile.fence import WriteFence

if TYPE_CHECKING:
    from tenantplane.config import Settings

STORE_NAME = "tenantplane-vault"


@dataclass(frozen=True)
class StoreSettings:
    vault_server: str
    auth_mount_template: str  # the cluster's own auth mount: {tenant}, {cluster}, {uid}
    role_template: str
    refresh_interval: str
    server_template: str  # how to reach a tenant cluster ("" = vCluster's kubeconfig)
    host_template: str
    timeout_seconds: float
    # The service account External Secrets logs in as (serviceAccountRef), in the cluster.
    service_account: str = "tenantplane-vault"
    service_account_namespace: str = "tenantplane-system"


class ExternalSecretsSync:
    def __init__(self, host: Kube, settings: StoreSettings) -> None:
        self.host = host
        self.settings = settings

    async def apply(self, cluster: ClusterRef, copy: CopySpec, fence: WriteFence) -> bool:
        tenant_cluster = await self._tenant_cluster(cluster)
        try:
            # Each write under the lease, held just before it (reconcile/fence.py).
            for manifest in self.login_account(copy.tenant):
                await fence.hold()
                await tenant_cluster.apply(manifest)
            await fence.hold()
            await tenant_cluster.apply(self.secret_store(cluster, copy))
            await fence.hold()
            await tenant_cluster.apply(_namespace(copy))
            before = await tenant_cluster.get("ExternalSecret", copy.name, copy.namespace)
            await fence.hold()
            after = await tenant_cluster.apply(self.external_secret(copy))
        finally:
            await tenant_cluster.aclose()
        written = before is None or (
            before["metadata"]["resourceVersion"] != after["metadata"]["resourceVersion"]
        )
        ready = condition(after, "Ready")
        synced = ready.get("status") == "True" and not _stale(after)
        if synced:
            return written
        message = ready.get("message") or "waiting for External Secrets"
        if ready.get("status") == "False":
            raise SyncError(f"External Secrets: {message}")
        raise SyncPending(f"External Secrets has not synced yet: {message}")

    async def remove(
        self, cluster: ClusterRef, namespace: str, name: str, owner_uid: str, fence: WriteFence
    ) -> None:
        tenant_cluster = await self._tenant_cluster(cluster)
        try:
            existing = await tenant_cluster.get("ExternalSecret", name, namespace)
            labels = (existing or {}).get("metadata", {}).get("labels") or {}
            if existing is not None and labels.get(LABEL_OWNER_UID) == owner_uid:
                await fence.hold()
                # The Secret it made goes with it (creationPolicy Owner).
                await tenant_cluster.delete("ExternalSecret", name, namespace)
        finally:
            await tenant_cluster.aclose()

    # -- manifests ---------------------------------------------------------------------------

    def login_account(self, tenant: str) -> list[Manifest]:
        """The service account External Secrets logs in as, allowed to review tokens."""
        labels = {LABEL_MANAGED_BY: "tenantplane", LABEL_TENANT: tenant}
        name, namespace = self.settings.service_account, self.settings.service_account_namespace
        return [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": namespace, "labels": labels},
            },
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": f"{name}-auth-delegator", "labels": labels},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "system:auth-delegator",
                },
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
            },
        ]

    def secret_store(self, cluster: ClusterRef, copy: CopySpec) -> Manifest:
        return {
            "apiVersion": "external-secrets.io/v1",
            "kind": "ClusterSecretStore",
            "metadata": {
                "name": STORE_NAME,
                "labels": {LABEL_MANAGED_BY: "tenantplane", LABEL_TENANT: copy.tenant},
            },
            "spec": {
                "provider": {
                    "vault": {
                        "server": self.settings.vault_server,
                        "path": copy.vault_mount,
                        "version": "v2",
                        "auth": {
                            "kubernetes": {
                                "mountPath": auth_mount(self.settings.auth_mount_template, cluster),
                                "role": self.settings.role_template.format(tenant=copy.tenant),
                                "serviceAccountRef": {
                                    "name": self.settings.service_account,
                                    "namespace": self.settings.service_account_namespace,
                                },
                            }
                        },
                    }
                }
            },
        }

    def external_secret(self, copy: CopySpec) -> Manifest:
        return {
            "apiVersion": "external-secrets.io/v1",
            "kind": "ExternalSecret",
            "metadata": {
                "name": copy.name,
                "namespace": copy.namespace,
                "labels": {
                    LABEL_MANAGED_BY: "tenantplane",
                    LABEL_TENANT: copy.tenant,
                    LABEL_OWNER_UID: copy.owner_uid,
                },
            },
            "spec": {
                "refreshInterval": self.settings.refresh_interval,
                "secretStoreRef": {"kind": "ClusterSecretStore", "name": STORE_NAME},
                "target": {"name": copy.name, "creationPolicy": "Owner"},
                "dataFrom": [{"extract": {"key": copy.secret_path}}],
            },
        }

    # -- the tenant cluster ------------------------------------------------------------------

    async def _tenant_cluster(self, cluster: ClusterRef) -> Kube:
        namespace = tenant_namespace(cluster.tenant)
        try:
            config, _ = await vcluster_kubeconfig(self.host, cluster)
        except LookupError as exc:
            raise SyncPending(str(exc)) from None
        except ValueError as exc:
            raise SyncError(str(exc)) from None
        server = None
        if self.settings.server_template:
            host = self.settings.host_template.format(
                cluster=cluster.name, tenant=cluster.tenant, namespace=namespace
            )
            server = self.settings.server_template.format(
                cluster=cluster.name, tenant=cluster.tenant, namespace=namespace, host=host
            )
        return Kube(kubeconfig_client(config, self.settings.timeout_seconds, server))


def _namespace(copy: CopySpec) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": copy.namespace, "labels": {LABEL_MANAGED_BY: "tenantplane"}},
    }


def _stale(external: Manifest) -> bool:
    """The Ready condition is about an older spec (External Secrets has not seen this one):
    it writes ``syncedResourceVersion`` as ``<generation>-<hash of labels and annotations>``."""
    synced: Any = (external.get("status") or {}).get("syncedResourceVersion")
    generation = external["metadata"].get("generation")
    if not synced or generation is None:
        return False
    return str(synced).split("-", 1)[0] != str(generation)


def build_external_secrets(
    settings: Settings,
) -> tuple[ExternalSecretsSync, Callable[[], Awaitable[None]]]:
    from tenantplane.providers.kube import client_for, load_kubeconfig

    if not settings.vault_addr:
        raise ValueError("TENANTPLANE_SYNC_PROVIDER=external-secrets needs TENANTPLANE_VAULT_ADDR")
    config = load_kubeconfig(settings.kubeconfig, settings.kubernetes_context)
    host = Kube(client_for(config, settings.kubernetes_timeout_seconds))
    store = StoreSettings(
        vault_server=settings.vault_addr,
        auth_mount_template=settings.vault_kubernetes_auth_mount_template,
        role_template=settings.vault_kubernetes_role_template,
        service_account=settings.external_secrets_service_account,
        service_account_namespace=settings.external_secrets_service_account_namespace,
        refresh_interval=settings.external_secrets_refresh_interval,
        server_template=settings.vcluster_server_template,
        host_template=settings.cluster_host_template,
        timeout_seconds=settings.kubernetes_timeout_seconds,
    )
    return ExternalSecretsSync(host, store), host.aclose
