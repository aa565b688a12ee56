"""What a vCluster is given so that tenants' kubectl works on it (docs/clusters.md, "Access
with kubectl"): its API server reviews bearer tokens at tenantplane's token webhook, and the
groups the review answers are bound to Kubernetes' own roles inside the cluster.

- The webhook kubeconfig (kube-apiserver ``--authentication-token-webhook-config-file``):
  the cluster's review URL and the credential it presents there, kept in the host Secret
  ``<cluster>-token-webhook`` and mounted into the control plane.
- The bindings ``tenantplane:admin`` → ``cluster-admin`` and ``tenantplane:readonly`` →
  ``view``, which vCluster applies inside the virtual cluster
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


def role_bindings() -> list[dict[str, Any]]:
    """The ClusterRoleBindings of the review's groups, inside the tenant's cluster."""
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {
                "name": group,
                "labels": {"app.kubernetes.io/managed-by": "tenantplane"},
            },
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role,
            },
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
        }
        for group, role in ROLE_OF_GROUP.items()
    ]


def role_bindings_manifests() -> str:
    """``role_bindings`` as the YAML stream vCluster's ``manifests`` value takes."""
    return yaml.safe_dump_all(role_bindings(), sort_keys=False)
