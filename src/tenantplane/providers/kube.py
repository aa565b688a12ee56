"""Kubernetes access shared by the orchestrator and the secret sync (lightkube, async).

Objects are handled as plain manifests (dicts): written with server-side apply under one field
manager (idempotent: applying the same manifest again changes nothing), read back as dicts.
Failures other than "not found" propagate: the reconciler framework retries the step after
its backoff (conflicts, throttling, server errors, timeouts alike).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from lightkube import ApiError, AsyncClient, KubeConfig, codecs
from lightkube.config.kubeconfig import SingleConfig
from lightkube.generic_resource import create_global_resource, create_namespaced_resource
from lightkube.resources.apps_v1 import Deployment, StatefulSet
from lightkube.resources.core_v1 import (
    LimitRange,
    Namespace,
    PersistentVolumeClaim,
    ResourceQuota,
    Secret,
)
from lightkube.resources.networking_v1 import NetworkPolicy

Manifest = dict[str, Any]

FIELD_MANAGER = "tenantplane"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_TENANT = "tenantplane.io/tenant"
LABEL_CLUSTER = "tenantplane.io/cluster"
LABEL_CLUSTER_UID = "tenantplane.io/cluster-uid"
LABEL_OWNER_UID = "tenantplane.io/owner-uid"

HelmRepository = create_namespaced_resource(
    "source.toolkit.fluxcd.io", "v1", "HelmRepository", "helmrepositories"
)
HelmRelease = create_namespaced_resource(
    "helm.toolkit.fluxcd.io", "v2", "HelmRelease", "helmreleases"
)
ClusterSecretStore = create_global_resource(
    "external-secrets.io", "v1", "ClusterSecretStore", "clustersecretstores"
)
ExternalSecret = create_namespaced_resource(
    "external-secrets.io", "v1", "ExternalSecret", "externalsecrets"
)

KINDS: dict[str, Any] = {
    "Namespace": Namespace,
    "ResourceQuota": ResourceQuota,
    "LimitRange": LimitRange,
    "NetworkPolicy": NetworkPolicy,
    "Secret": Secret,
    "PersistentVolumeClaim": PersistentVolumeClaim,
    "StatefulSet": StatefulSet,
    "Deployment": Deployment,
    "HelmRepository": HelmRepository,
    "HelmRelease": HelmRelease,
    "ClusterSecretStore": ClusterSecretStore,
    "ExternalSecret": ExternalSecret,
}


def tenant_namespace(tenant: str) -> str:
    return f"tp-{tenant}"


def load_kubeconfig(path: Path | None, context: str | None) -> KubeConfig | SingleConfig:
    """The kubeconfig file (its ``context``, or its current one), else the in-cluster
    service account."""
    if path is None:
        return KubeConfig.from_service_account()
    config = KubeConfig.from_file(path)
    if not context:
        return config
    single = config.get(context_name=context)
    if single is None:
        raise ValueError(f"context {context!r} is not in {path}")
    return single


def kubeconfig_client(
    config: Mapping[str, Any], timeout_seconds: float, server: str | None = None
) -> AsyncClient:
    """A client for a cluster described by a kubeconfig document (vCluster's Secret)."""
    document = dict(config)
    if server:
        document["clusters"] = [
            {**entry, "cluster": {**entry.get("cluster", {}), "server": server}}
            for entry in document.get("clusters", [])
        ]
    return client_for(KubeConfig.from_dict(document), timeout_seconds)


def client_for(config: KubeConfig | SingleConfig, timeout_seconds: float) -> AsyncClient:
    import httpx2

    return AsyncClient(
        config,
        timeout=httpx2.Timeout(timeout_seconds),
        field_manager=FIELD_MANAGER,
        trust_env=False,
    )


class Kube:
    """Manifests in, dicts out; absent objects are ``None``."""

    def __init__(self, client: AsyncClient) -> None:
        self.client = client

    async def apply(self, manifest: Manifest) -> Manifest:
        resource = codecs.from_dict(manifest)
        applied = await self.client.apply(
            cast(Any, resource), field_manager=FIELD_MANAGER, force=True
        )
        return _to_dict(applied)

    async def create_if_absent(self, manifest: Manifest) -> bool:
        """Create once and never overwrite (generated content such as keys); True if created."""
        try:
            await self.client.create(cast(Any, codecs.from_dict(manifest)))
        except ApiError as exc:
            if exc.status.code == 409:
                return False
            raise
        return True

    async def get(self, kind: str, name: str, namespace: str | None = None) -> Manifest | None:
        try:
            found = await self.client.get(KINDS[kind], name, namespace=namespace)
        except ApiError as exc:
            if exc.status.code == 404:
                return None
            raise
        return _to_dict(found)

    async def list(
        self, kind: str, namespace: str | None = None, labels: Mapping[str, str] | None = None
    ) -> list[Manifest]:
        items = self.client.list(
            KINDS[kind], namespace=namespace, labels=dict(labels or {}) or None
        )
        return [_to_dict(item) async for item in items]

    async def delete(self, kind: str, name: str, namespace: str | None = None) -> bool:
        """Request deletion; False when it was already gone."""
        try:
            await self.client.delete(KINDS[kind], name, namespace=namespace)
        except ApiError as exc:
            if exc.status.code == 404:
                return False
            raise
        return True

    async def delete_labelled(self, kind: str, namespace: str, labels: Mapping[str, str]) -> int:
        """Delete what the label selector finds, one by one; how many were there."""
        found = await self.list(kind, namespace, labels)
        for item in found:
            await self.delete(kind, item["metadata"]["name"], namespace)
        return len(found)

    async def aclose(self) -> None:
        await self.client.close()


def _to_dict(resource: Any) -> Manifest:
    document = resource.to_dict() if hasattr(resource, "to_dict") else dict(resource)
    return cast(Manifest, document)


def dig(document: Any, *path: str, default: Any = None) -> Any:
    """``document[path[0]][path[1]]…``, or ``default`` where the path stops."""
    for key in path:
        if not isinstance(document, Mapping) or key not in document:
            return default
        document = document[key]
    return document


def condition(document: Manifest, kind: str) -> Manifest:
    for entry in dig(document, "status", "conditions", default=[]) or []:
        if entry.get("type") == kind:
            return cast(Manifest, entry)
    return {}
