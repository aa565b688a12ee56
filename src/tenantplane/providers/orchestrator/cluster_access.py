"""What a vCluster is given so that tenants' kubectl works on it (docs/clusters.md, "Access
with kubectl"): its API server reviews bearer tokens at tenantplane's token webhook, and the
groups the review answers are bound to Kubernetes' own roles inside the cluster.

- The webhook kubeconfig (kube-apiserver ``--authentication-token-webhook-config-file``):
  the cluster's review URL and the credential it presents there, kept in the host Secret
  ``<cluster>-token-webhook`` and mounted into the control plane.
- The bindings ``tenantplane:admin`` → ``cluster-admin`` and ``tenantplane:readonly`` →
  ``view`` and ``tenantplane:cluster-reader`` (namespaces, nodes, volumes, storage classes
  and CRDs, which ``view`` does not cover), which vCluster applies inside the virtual cluster
  (``experimental.deploy.vcluster.manifests``).

vCluster's own front (its syncer, on the service port) authenticates a bearer token by a
TokenReview to the virtual API server, which asks the webhook, and keeps a successful answer
5 s (loft-sh/vcluster pkg/authentication/delegatingauthenticator): a revoked token works at
most the webhook's cache TTL plus those 5 s.
"""

from __future__ import annotations

from typing import Any

import yaml

from tenantplane.providers.orchestrator import TokenWebhook

MOUNT = "/etc/vcluster-token-webhook"
KUBECONFIG_KEY = "kubeconfig.yaml"
ADMIN_GROUP = "tenantplane:admin"
READONLY_GROUP = "tenantplane:readonly"
# Each group of the review and the built-in ClusterRole it is given.
ROLE_OF_GROUP = {ADMIN_GROUP: "cluster-admin", READONLY_GROUP: "view"}


def secret_name(cluster: str) -> str:
    return f"{cluster}-token-webhook"


def webhook_kubeconfig(webhook: TokenWebhook) -> str:
    """The kubeconfig the API server reads the webhook's address and credential from."""
    cluster: dict[str, Any] = {"server": webhook.url}
    if webhook.certificate_authority:
        cluster["certificate-authority-data"] = webhook.certificate_authority
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "tenantplane", "cluster": cluster}],
        "users": [{"name": "cluster", "user": {"token": webhook.credential}}],
        "contexts": [{"name": "webhook", "context": {"cluster": "tenantplane", "user": "cluster"}}],
        "current-context": "webhook",
    }
    return yaml.safe_dump(config, sort_keys=False)


def api_server_args(webhook: TokenWebhook) -> list[str]:
    # v1 explicitly: kube-apiserver's default is still v1beta1.
    return [
        f"--authentication-token-webhook-config-file={MOUNT}/{KUBECONFIG_KEY}",
        "--authentication-token-webhook-version=v1",
        f"--authentication-token-webhook-cache-ttl={webhook.cache_ttl}",
    ]


# Kubernetes' ``view`` covers namespaced objects only: a readonly caller could not even list
# the namespaces. This role adds reading the cluster-scoped objects a viewer needs.
CLUSTER_READER = "tenantplane:cluster-reader"
CLUSTER_READER_RULES = [
    {
        "apiGroups": [""],
        "resources": ["namespaces", "nodes", "persistentvolumes"],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["storage.k8s.io"],
        "resources": ["storageclasses"],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["apiextensions.k8s.io"],
        "resources": ["customresourcedefinitions"],
        "verbs": ["get", "list", "watch"],
    },
]
_MANAGED = {"app.kubernetes.io/managed-by": "tenantplane"}


def _binding(name: str, group: str, role: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name, "labels": dict(_MANAGED)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
    }


def access_manifests() -> list[dict[str, Any]]:
    """Inside the tenant's cluster: the review's groups bound to Kubernetes' roles, and the
    readonly group's reading of cluster-scoped objects."""
    return [
        *(_binding(group, group, role) for group, role in ROLE_OF_GROUP.items()),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": CLUSTER_READER, "labels": dict(_MANAGED)},
            "rules": CLUSTER_READER_RULES,
        },
        _binding(CLUSTER_READER, READONLY_GROUP, CLUSTER_READER),
    ]


def access_manifests_yaml() -> str:
    """``access_manifests`` as the YAML stream vCluster's ``manifests`` value takes."""
    return yaml.safe_dump_all(access_manifests(), sort_keys=False)
