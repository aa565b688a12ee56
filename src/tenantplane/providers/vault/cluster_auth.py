"""Per-cluster Kubernetes auth in the vault, for External Secrets inside tenant clusters.

A Vault/OpenBao Kubernetes auth mount knows one Kubernetes API server (``kubernetes_host``
and its CA in ``auth/<mount>/config``), and every vCluster issues its own service-account
tokens: one shared mount cannot check the tokens of many clusters. So every tenant cluster
gets its own mount, created when the cluster is provisioned and removed when it is deleted:

- auth mount ``TENANTPLANE_VAULT_KUBERNETES_AUTH_MOUNT_TEMPLATE`` (default ``k8s-{uid}``,
  the cluster's uid: unique per incarnation, so a cluster deleted and created again under the
  same name never shares a mount with its predecessor) of type ``kubernetes``, configured with
  the cluster's API address and its CA (``certificate-authority`` of vCluster's ``vc-<cluster>``
  Secret). No reviewer JWT is stored and the vault's own is not used
  (``disable_local_ca_jwt``): each login's JWT reviews itself, so the service account needs
  ``system:auth-delegator`` in its cluster (the sync provider binds it);
- policy of the same name: ``read`` on the tenant's KV v2 ``data/*`` and ``metadata/*``, nothing
  else, so a cluster of another tenant cannot read this tenant's mount;
- role ``TENANTPLANE_VAULT_KUBERNETES_ROLE_TEMPLATE`` in the mount, bound to the service account
  the ClusterSecretStore names (``serviceAccountRef``), with that policy.

Every call is idempotent: what is read back equal is not written again, and each write is
made under the fence. hvac is synchronous, so each call runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import hvac
import hvac.exceptions
import requests
import yaml

from tenantplane.providers.http_pool import close_adapters
from tenantplane.providers.kube import Kube, tenant_namespace
from tenantplane.providers.sync import ClusterRef
from tenantplane.reconcile.fence import WriteFence

if TYPE_CHECKING:
    from tenantplane.config import Settings

T = TypeVar("T")


class ClusterAuthError(Exception):
    """The cluster's auth mount could not be converged (the step is retried)."""


class ClusterAuth(Protocol):
    """What the cluster lifecycle calls: ``ensure`` once the cluster serves, ``remove`` when
    it is deleted; both idempotent, every write under ``fence``."""

    async def ensure(self, cluster: ClusterRef, fence: WriteFence) -> bool: ...

    async def remove(self, cluster: ClusterRef, fence: WriteFence) -> bool: ...


@dataclass(frozen=True)
class ClusterAuthSettings:
    mount_template: str  # {tenant}, {cluster}, {uid}
    role_template: str  # {tenant}
    kv_mount_template: str  # {tenant}: the tenant's KV v2 mount
    # How the vault reaches a tenant cluster's API server: "" = the server of vCluster's
    # kubeconfig; else {cluster}, {tenant}, {namespace} and {host} are replaced.
    kubernetes_host_template: str
    cluster_host_template: str
    service_account: str
    service_account_namespace: str
    timeout_seconds: float = 5.0


def auth_mount(template: str, cluster: ClusterRef) -> str:
    return template.format(tenant=cluster.tenant, cluster=cluster.name, uid=cluster.uid)


def policy_document(kv_mount: str) -> str:
    return (
        f'path "{kv_mount}/data/*" {{\n  capabilities = ["read"]\n}}\n'
        f'path "{kv_mount}/metadata/*" {{\n  capabilities = ["read"]\n}}\n'
    )


async def vcluster_kubeconfig(host: Kube, cluster: ClusterRef) -> tuple[dict[str, Any], str]:
    """vCluster's kubeconfig of ``cluster`` and its CA (PEM), from ``vc-<cluster>`` in the
    tenant's namespace of the host cluster. LookupError when vCluster has not written it yet,
    ValueError when it has no kubeconfig."""
    secret = await host.get("Secret", f"vc-{cluster.name}", tenant_namespace(cluster.tenant))
    if secret is None:
        raise LookupError(f"cluster {cluster.name!r} has no kubeconfig yet")
    data = secret.get("data") or {}
    if not data.get("config"):
        raise ValueError(f"the kubeconfig Secret of cluster {cluster.name!r} has no config")
    config = yaml.safe_load(base64.b64decode(data["config"]))
    authority = base64.b64decode(data.get("certificate-authority") or "").decode()
    return config, authority


class VaultClusterAuth:
    def __init__(self, host: Kube, addr: str, token: str, settings: ClusterAuthSettings) -> None:
        self.host = host
        self.addr = addr
        self._token = token
        self.settings = settings
        self._session = requests.Session()

    async def aclose(self) -> None:
        close_adapters(self._session.adapters.values())

    def mount_for(self, cluster: ClusterRef) -> str:
        return auth_mount(self.settings.mount_template, cluster)

    async def ensure(self, cluster: ClusterRef, fence: WriteFence) -> bool:
        """Create or correct the cluster's mount, config, policy and role; True when
        something was written."""
        try:
            config, authority = await vcluster_kubeconfig(self.host, cluster)
        except (LookupError, ValueError) as exc:
            raise ClusterAuthError(str(exc)) from None
        if not authority:
            raise ClusterAuthError(f"the kubeconfig Secret of cluster {cluster.name!r} has no CA")
        mount = self.mount_for(cluster)
        kv_mount = self.settings.kv_mount_template.format(tenant=cluster.tenant)
        role = self.settings.role_template.format(tenant=cluster.tenant)
        wanted_config = {
            "kubernetes_host": self._kubernetes_host(cluster, config),
            "kubernetes_ca_cert": authority,
            "disable_local_ca_jwt": True,
        }
        wanted_role = {
            "bound_service_account_names": [self.settings.service_account],
            "bound_service_account_namespaces": [self.settings.service_account_namespace],
            "token_policies": [mount],
        }
        written = False
        methods = await self._call("list auth methods", lambda c: c.sys.list_auth_methods())
        existing = (methods.get("data") or methods).get(f"{mount}/")
        if existing is None:
            await fence.hold()
            description = f"tenantplane: cluster {cluster.name} of tenant {cluster.tenant}"
            await self._call(
                "enable the auth mount",
                lambda c: c.sys.enable_auth_method(
                    "kubernetes", path=mount, description=description
                ),
            )
            written = True
        elif existing.get("type") != "kubernetes":
            raise ClusterAuthError(f"the vault's auth mount {mount} is not of type kubernetes")
        current = await self._read("read the auth config", f"auth/{mount}/config")
        if any(current.get(key) != value for key, value in wanted_config.items()):
            await fence.hold()
            await self._call(
                "configure the auth mount",
                lambda c: c.auth.kubernetes.configure(
                    wanted_config["kubernetes_host"],
                    kubernetes_ca_cert=authority,
                    disable_local_ca_jwt=True,
                    mount_point=mount,
                ),
            )
            written = True
        policy = policy_document(kv_mount)
        current = await self._read("read the policy", f"sys/policies/acl/{mount}")
        if current.get("policy") != policy:
            await fence.hold()
            await self._call(
                "write the policy",
                lambda c: c.write_data(f"sys/policies/acl/{mount}", data={"policy": policy}),
            )
            written = True
        current = await self._read("read the role", f"auth/{mount}/role/{role}")
        if any(current.get(key) != value for key, value in wanted_role.items()):
            await fence.hold()
            await self._call(
                "write the role",
                lambda c: c.auth.kubernetes.create_role(
                    role,
                    bound_service_account_names=wanted_role["bound_service_account_names"],
                    bound_service_account_namespaces=wanted_role[
                        "bound_service_account_namespaces"
                    ],
                    policies=[mount],
                    mount_point=mount,
                ),
            )
            written = True
        return written

    async def remove(self, cluster: ClusterRef, fence: WriteFence) -> bool:
        """Remove the cluster's mount (its config and roles go with it) and policy; True
        when something was there."""
        mount = self.mount_for(cluster)
        removed = False
        methods = await self._call("list auth methods", lambda c: c.sys.list_auth_methods())
        if f"{mount}/" in (methods.get("data") or methods):
            await fence.hold()
            await self._call("disable the auth mount", lambda c: c.sys.disable_auth_method(mount))
            removed = True
        if await self._read("read the policy", f"sys/policies/acl/{mount}"):
            await fence.hold()
            await self._call("delete the policy", lambda c: c.delete(f"sys/policies/acl/{mount}"))
            removed = True
        return removed

    def _kubernetes_host(self, cluster: ClusterRef, config: dict[str, Any]) -> str:
        template = self.settings.kubernetes_host_template
        if not template:
            return str(config["clusters"][0]["cluster"]["server"])
        namespace = tenant_namespace(cluster.tenant)
        names = {"cluster": cluster.name, "tenant": cluster.tenant, "namespace": namespace}
        host = self.settings.cluster_host_template.format(**names)
        return template.format(**names, host=host)

    async def _read(self, what: str, path: str) -> dict[str, Any]:
        """The ``data`` of a read, {} when the path does not exist."""

        def read(client: hvac.Client) -> Any:
            try:
                return client.read(path)
            except hvac.exceptions.InvalidPath:
                return None

        response = await self._call(what, read)
        data = response.get("data") if isinstance(response, dict) else None
        return data if isinstance(data, dict) else {}

    async def _call(self, what: str, call: Callable[[hvac.Client], T]) -> T:
        def run() -> T:
            client = hvac.Client(
                url=self.addr,
                token=self._token,
                timeout=self.settings.timeout_seconds,
                session=self._session,
            )
            return call(client)

        try:
            return await asyncio.to_thread(run)
        except (hvac.exceptions.VaultError, requests.exceptions.RequestException) as exc:
            # Only the exception's class: its text may quote the vault's response.
            raise ClusterAuthError(f"the vault failed to {what} ({type(exc).__name__})") from None


def build_cluster_auth(settings: Settings, host: Kube) -> VaultClusterAuth:
    """``host`` reaches the host cluster (vCluster's kubeconfig Secrets)."""
    token = settings.vault_token.get_secret_value() if settings.vault_token else ""
    return VaultClusterAuth(
        host,
        settings.vault_addr or "",
        token,
        ClusterAuthSettings(
            mount_template=settings.vault_kubernetes_auth_mount_template,
            role_template=settings.vault_kubernetes_role_template,
            kv_mount_template=settings.vault_mount_template,
            kubernetes_host_template=settings.vault_kubernetes_host_template,
            cluster_host_template=settings.cluster_host_template,
            service_account=settings.external_secrets_service_account,
            service_account_namespace=settings.external_secrets_service_account_namespace,
            timeout_seconds=settings.vault_timeout_seconds,
        ),
    )
