"""deploy/: the manifests that run tenantplane on Kubernetes. kubectl dry-runs them (client
side) against the fake API server, which answers discovery only (kubectl resolves kinds
through it; no OpenAPI document, hence --validate=false) and must be left untouched. The
worker's RBAC is checked against the requests the orchestrator and the secret sync really
make on a host cluster: everything they do is granted, and nothing granted goes unused."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tenantplane.config import Settings
from tenantplane.providers.kube import Kube, client_for, load_kubeconfig
from tenantplane.providers.orchestrator import ClusterSpec, Stage
from tenantplane.providers.orchestrator.kubernetes import ChartSettings, KubernetesOrchestrator
from tenantplane.providers.sync import ClusterRef, CopySpec, SyncPending
from tenantplane.providers.sync.external_secrets import ExternalSecretsSync, StoreSettings
from tenantplane.reconcile.fence import UNFENCED
from tests.fakes.kubernetes import KINDS
from tests.fakes.kubernetes_fixtures import HostCluster

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"


def documents() -> Iterator[dict[str, Any]]:
    for path in sorted(DEPLOY.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if document:
                yield document


def find(kind: str, name: str) -> dict[str, Any]:
    [found] = [d for d in documents() if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


def test_kubectl_dry_run_accepts_every_manifest(host_cluster: HostCluster) -> None:
    # kubectl keeps its discovery cache under HOME: the test's directory, not the checkout.
    home = str(host_cluster.kubeconfig.parent)
    env = {**os.environ, "KUBECONFIG": str(host_cluster.kubeconfig), "HOME": home}
    result = subprocess.run(
        [KUBECTL, "apply", "--dry-run=client", "--validate=false", "-f", str(DEPLOY)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == len(list(documents()))
    assert all(line.endswith("created (dry run)") for line in lines), lines
    assert not host_cluster.api.objects  # a dry run: nothing was sent to be stored
    methods = {method for method, _ in host_cluster.api.requests}
    assert methods == {"GET"}


def test_the_api_scales_out_and_leaves_reconciling_to_the_worker() -> None:
    api = find("Deployment", "tenantplane-api")
    assert api["spec"]["replicas"] >= 2
    [container] = api["spec"]["template"]["spec"]["containers"]
    assert container["args"][0] == "serve"
    assert {"name": "TENANTPLANE_RUN_RECONCILERS", "value": "false"} in container["env"]
    assert api["spec"]["template"]["spec"]["automountServiceAccountToken"] is False
    worker = find("Deployment", "tenantplane-worker")
    [container] = worker["spec"]["template"]["spec"]["containers"]
    assert container["args"][0] == "worker"
    assert worker["spec"]["template"]["spec"]["serviceAccountName"] == "tenantplane-worker"
    job = find("Job", "tenantplane-migrate")
    assert job["spec"]["template"]["spec"]["containers"][0]["args"][0] == "migrate"
    # PostgreSQL and Redis are external: referenced through the Secret, never deployed here.
    kinds = {d["kind"] for d in documents()}
    assert "StatefulSet" not in kinds
    for deployment in (api, worker, job):
        sources = deployment["spec"]["template"]["spec"]["containers"][0]["envFrom"]
        assert {"secretRef": {"name": "tenantplane-secrets"}} in sources
    config = find("ConfigMap", "tenantplane-config")["data"]
    assert config["TENANTPLANE_ORCHESTRATOR"] == "kubernetes"
    # The processes start with these settings: they are valid together (the kubernetes
    # orchestrator needs the token webhook's https URL, for one).
    settings = Settings(
        _env_file=None,
        **{key.removeprefix("TENANTPLANE_").lower(): value for key, value in config.items()},
    )
    assert settings.orchestrator == "kubernetes"


# -- RBAC against the requests really made -------------------------------------------------

_PLURALS = {kind.plural: kind for kind in KINDS}


def permission(method: str, path: str) -> tuple[str, str, str]:
    """(API group, resource, verb) that a request needs."""
    parts = [part for part in path.split("/") if part]
    rest = parts[2:] if parts[0] == "api" else parts[3:]
    if rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]
    kind = _PLURALS[rest[0]]
    named = len(rest) > 1
    verb = {
        "GET": "get" if named else "list",
        "POST": "create",
        "PATCH": "patch",
        "PUT": "update",
        "DELETE": "delete",
    }[method]
    return kind.group, kind.plural, verb


def granted() -> set[tuple[str, str, str]]:
    role = find("ClusterRole", "tenantplane-worker")
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


async def test_the_worker_role_is_exactly_what_the_platform_uses(
    host_cluster: HostCluster,
) -> None:
    kube = Kube(client_for(load_kubeconfig(host_cluster.kubeconfig, None), 5.0))
    chart = ChartSettings("https://charts.loft.sh", "0.30.0", "{cluster}.example.net")
    orchestrator = KubernetesOrchestrator(kube, chart)
    sync = ExternalSecretsSync(
        kube,
        StoreSettings(
            "https://vault.example.net", "kubernetes", "t-{tenant}", "1h", "", "{cluster}", 5
        ),
    )
    cluster = ClusterSpec(
        uuid.uuid4().hex,
        "dev",
        "acme",
        "1.33",
        5,
        True,
        "1",
        "1Gi",
        "1Gi",
        {"cpu": "4", "memory": "8Gi", "storage": "50Gi"},
    )
    for _ in range(40):
        if (await orchestrator.apply(cluster, UNFENCED)).settled:
            break
        host_cluster.controllers.step()
    ref = ClusterRef(cluster.uid, "other", "", "", tenant="acme")
    with pytest.raises(SyncPending):  # reads the kubeconfig Secret from the host cluster
        await sync.apply(ref, CopySpec("acme", "default", "s", "u", "tenant-acme", "p"), UNFENCED)
    for _ in range(40):
        if (await orchestrator.delete(cluster, UNFENCED)).stage == Stage.gone:
            break
        host_cluster.controllers.step()
    await kube.aclose()
    used = {permission(method, path) for method, path in host_cluster.api.requests}
    # A server-side apply that finds no object creates it: that needs create as well.
    applied = {(group, resource, "create") for group, resource, verb in used if verb == "patch"}
    needed = used | applied
    assert needed <= granted(), sorted(needed - granted())
    assert granted() <= needed, sorted(granted() - needed)
    assert not any(
        re.search(r"\*", str(rule)) for rule in find("ClusterRole", "tenantplane-worker")["rules"]
    )
