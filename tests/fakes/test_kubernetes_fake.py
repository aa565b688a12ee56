"""The fake Kubernetes API server checked with an outside client: Debian's kubectl (get,
apply client-side and server-side, label selectors, delete) on every kind the platform
uses, through a kubeconfig, so that the fake is not only a mirror of lightkube."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.kubernetes_fixtures import HostCluster

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
# The fake serves no OpenAPI document, which kubectl's client-side validation downloads.
NO_SCHEMA = "--validate=false"

MANIFESTS = """\
apiVersion: v1
kind: Namespace
metadata: {name: tp-acme, labels: {tenantplane.io/tenant: acme}}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: plan, namespace: tp-acme}
spec: {hard: {limits.cpu: "8", limits.memory: 16Gi, requests.storage: 200Gi}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: tenant-isolation, namespace: tp-acme}
spec: {podSelector: {}, policyTypes: [Ingress], ingress: [{from: [{podSelector: {}}]}]}
---
apiVersion: v1
kind: Secret
metadata: {name: dev-encryption, namespace: tp-acme, labels: {release: dev}}
stringData: {config.yaml: "kind: EncryptionConfiguration"}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-dev-0, namespace: tp-acme, labels: {release: dev}}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 5Gi}}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: dev, namespace: tp-acme, labels: {release: dev}}
spec:
  replicas: 1
  serviceName: dev-headless
  selector: {matchLabels: {app: dev}}
  template:
    metadata: {labels: {app: dev}}
    spec: {containers: [{name: syncer, image: "registry.k8s.io/kube-apiserver:v1.33.5"}]}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: vcluster, namespace: tp-acme}
spec: {interval: 1h, url: "https://charts.loft.sh"}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: dev, namespace: tp-acme, labels: {release: dev}}
spec:
  interval: 10m
  chart:
    spec: {chart: vcluster, version: 0.30.0, sourceRef: {kind: HelmRepository, name: vcluster}}
  values: {controlPlane: {statefulSet: {highAvailability: {replicas: 3}}}}
---
apiVersion: external-secrets.io/v1
kind: ClusterSecretStore
metadata: {name: tenantplane-vault}
spec: {provider: {vault: {server: "https://vault.example.net", path: tenant-acme, version: v2}}}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: db-creds, namespace: tp-acme}
spec:
  refreshInterval: 1h
  secretStoreRef: {kind: ClusterSecretStore, name: tenantplane-vault}
  target: {name: db-creds}
  dataFrom: [{extract: {key: prod/db}}]
"""

KINDS = (
    "namespaces",
    "resourcequotas",
    "networkpolicies",
    "secrets",
    "persistentvolumeclaims",
    "statefulsets",
    "helmrepositories",
    "helmreleases",
    "clustersecretstores",
    "externalsecrets",
)


def kubectl(host: HostCluster, *args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(host.kubeconfig), "HOME": str(host.kubeconfig.parent)}
    result = subprocess.run(
        [KUBECTL, *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == expect, result.stderr
    return result


def get_json(host: HostCluster, *args: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(kubectl(host, "get", *args, "-o", "json").stdout)
    return document


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    path = tmp_path / "manifests.yaml"
    path.write_text(MANIFESTS, encoding="utf-8")
    return path


def test_kubectl_applies_gets_and_deletes_every_kind(
    host_cluster: HostCluster, manifests: Path
) -> None:
    created = kubectl(host_cluster, "apply", NO_SCHEMA, "-f", str(manifests)).stdout
    assert created.count(" created") == len(KINDS)
    revision = host_cluster.api.revision
    unchanged = kubectl(host_cluster, "apply", NO_SCHEMA, "-f", str(manifests)).stdout
    # stringData is write-only, so kubectl sends it again (as against a real API server),
    # which stores the same data: nothing changed anywhere.
    assert unchanged.count(" unchanged") == len(KINDS) - 1, unchanged
    assert "secret/dev-encryption configured" in unchanged
    assert host_cluster.api.revision == revision
    for kind in KINDS:
        listed = get_json(host_cluster, kind, "-A")
        assert len(listed["items"]) == 1, kind
    secret = get_json(host_cluster, "secret", "dev-encryption", "-n", "tp-acme")
    assert "data" in secret
    assert "stringData" not in secret
    names = kubectl(host_cluster, "get", "ns", "-o", "name").stdout.split()
    assert names == ["namespace/tp-acme"]

    # Label selectors, as the platform uses them.
    labelled = get_json(host_cluster, "pvc,secret", "-n", "tp-acme", "-l", "release=dev")
    assert {item["kind"] for item in labelled["items"]} == {"PersistentVolumeClaim", "Secret"}
    assert get_json(host_cluster, "hr", "-n", "tp-acme", "-l", "release notin (dev)")["items"] == []
    assert len(get_json(host_cluster, "ns", "-l", "tenantplane.io/tenant")["items"]) == 1

    # A change through client-side apply (a merge patch) moves generation and resourceVersion.
    before = get_json(host_cluster, "hr", "dev", "-n", "tp-acme")
    manifests.write_text(MANIFESTS.replace("replicas: 3", "replicas: 1"), encoding="utf-8")
    assert "configured" in kubectl(host_cluster, "apply", NO_SCHEMA, "-f", str(manifests)).stdout
    after = get_json(host_cluster, "hr", "dev", "-n", "tp-acme")
    assert after["spec"]["values"]["controlPlane"]["statefulSet"]["highAvailability"] == {
        "replicas": 1
    }
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1
    assert int(after["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])

    # Creating what exists is AlreadyExists; a missing object is NotFound.
    exists = kubectl(host_cluster, "create", NO_SCHEMA, "-f", str(manifests), expect=1)
    assert "AlreadyExists" in exists.stderr or "already exists" in exists.stderr
    missing = kubectl(host_cluster, "get", "hr", "nope", "-n", "tp-acme", expect=1)
    assert "NotFound" in missing.stderr or "not found" in missing.stderr

    kubectl(host_cluster, "delete", "externalsecret", "db-creds", "-n", "tp-acme")
    assert get_json(host_cluster, "es", "-A")["items"] == []
    kubectl(host_cluster, "delete", "-f", str(manifests), "--ignore-not-found")
    host_cluster.controllers.step()  # the namespace controller empties tp-acme
    for kind in KINDS:
        assert get_json(host_cluster, kind, "-A")["items"] == [], kind


def test_kubectl_server_side_apply_owns_fields_and_reports_conflicts(
    host_cluster: HostCluster, manifests: Path
) -> None:
    kubectl(host_cluster, "apply", "--server-side", NO_SCHEMA, "-f", str(manifests))
    release = get_json(host_cluster, "hr", "dev", "-n", "tp-acme", "--show-managed-fields")
    managers = {entry["manager"] for entry in release["metadata"]["managedFields"]}
    assert managers == {"kubectl"}
    # Another manager applying a different value for a field kubectl owns: 409 Conflict.
    other = MANIFESTS.replace("interval: 10m", "interval: 5m")
    path = manifests.parent / "other.yaml"
    path.write_text(other, encoding="utf-8")
    conflict = kubectl(
        host_cluster,
        "apply",
        "--server-side",
        "--field-manager=someone-else",
        NO_SCHEMA,
        "-f",
        str(path),
        expect=1,
    )
    assert "conflict" in conflict.stderr.lower()
    kubectl(
        host_cluster,
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=someone-else",
        NO_SCHEMA,
        "-f",
        str(path),
    )
    assert get_json(host_cluster, "hr", "dev", "-n", "tp-acme")["spec"]["interval"] == "5m"


def test_kubectl_sees_stale_updates_refused_and_status_kept_apart(
    host_cluster: HostCluster, manifests: Path
) -> None:
    kubectl(host_cluster, "apply", NO_SCHEMA, "-f", str(manifests))
    release = get_json(host_cluster, "hr", "dev", "-n", "tp-acme")
    stale = {**release, "spec": {**release["spec"], "interval": "1m"}}
    stale["metadata"] = {**release["metadata"], "resourceVersion": "1"}
    path = manifests.parent / "stale.json"
    path.write_text(json.dumps(stale), encoding="utf-8")
    refused = kubectl(host_cluster, "replace", NO_SCHEMA, "-f", str(path), expect=1)
    assert "the object has been modified" in refused.stderr
    # status through the main resource is ignored; the status subresource writes it.
    patch = json.dumps({"status": {"observedGeneration": 7}})
    kubectl(host_cluster, "patch", "hr", "dev", "-n", "tp-acme", "--type=merge", "-p", patch)
    assert "status" not in get_json(host_cluster, "hr", "dev", "-n", "tp-acme")
    kubectl(
        host_cluster,
        "patch",
        "hr",
        "dev",
        "-n",
        "tp-acme",
        "--subresource=status",
        "--type=merge",
        "-p",
        patch,
    )
    status = get_json(host_cluster, "hr", "dev", "-n", "tp-acme")["status"]
    assert status == {"observedGeneration": 7}
