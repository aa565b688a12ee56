"""A real `tenantplane serve` provisioning clusters on the bed (TENANTPLANE_ORCHESTRATOR=
kubernetes: Flux installs the real vCluster chart), behind a TLS front as behind an ingress,
with every cluster's token webhook pointing at it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.contract.server import free_port, server_env, serving
from tests.kubernetes.conftest import Bed
from tests.kubernetes.tls_front import loopback_certificate, tls_front
from tests.oidc_provider import MockProvider

# Helm waits for the chart's workloads; kwok makes the pods ready within seconds.
CLUSTER_DEADLINE = 180.0


@dataclass(frozen=True)
class Platform:
    url: str
    env: dict[str, str]
    log: Path
    host_port: int  # the one external host's port (TENANTPLANE_CLUSTER_HOST_TEMPLATE)

    def api(self, method: str, path: str, key: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key}"}
        return httpx.request(
            method, f"{self.url}/api/v1{path}", headers=headers, timeout=30, **kwargs
        )

    def credentials_requests(self, tenant: str, cluster: str) -> int:
        path = f'"path":"/api/v1/tenants/{tenant}/clusters/{cluster}/credentials"'
        return self.log.read_text(errors="replace").count(path)


@contextmanager
def platform_on(
    bed: Bed, oidc_provider: MockProvider, tmp_path: Path, *, token_cache_ttl_seconds: float
) -> Iterator[Platform]:
    """serve on SQLite in ``tmp_path``, its clusters' API servers caching token reviews for
    ``token_cache_ttl_seconds``, members signing in through ``oidc_provider``."""
    serve_port, host_port, front_port = free_port(), free_port(), free_port()
    pki = bed.directory / "tenant-cluster" / "pki"
    certificate, key = loopback_certificate(pki / "ca.crt", pki / "ca.key", tmp_path)
    env = {
        **server_env(tmp_path),
        "TENANTPLANE_ORCHESTRATOR": "kubernetes",
        "TENANTPLANE_KUBECONFIG": str(bed.kubeconfig),
        "TENANTPLANE_VCLUSTER_CHART_REPOSITORY": bed.chart_repository,
        # Every cluster's endpoint is this host: the first tenant cluster's API server below.
        "TENANTPLANE_CLUSTER_HOST_TEMPLATE": f"localhost:{host_port}",
        # serve behind a TLS front, as behind an ingress: API servers send their
        # credential over TLS only.
        "TENANTPLANE_CLUSTER_TOKEN_WEBHOOK_URL": f"https://127.0.0.1:{front_port}",
        "TENANTPLANE_CLUSTER_TOKEN_WEBHOOK_CA_FILE": str(pki / "ca.crt"),
        "TENANTPLANE_CLUSTER_TOKEN_WEBHOOK_CACHE_TTL": f"{token_cache_ttl_seconds:g}s",
        "TENANTPLANE_KUBERNETES_POLL_SECONDS": "0.5",
        "TENANTPLANE_CLUSTER_RETRY_SECONDS": "0.5",
        "TENANTPLANE_CLUSTER_RESYNC_SECONDS": "2",
        "TENANTPLANE_OIDC_ISSUER": oidc_provider.issuer,
        "TENANTPLANE_OIDC_AUDIENCE": oidc_provider.audience,
    }
    log = tmp_path / "serve.log"
    with (
        tls_front(front_port, serve_port, certificate, key),
        serving(env, log, port=serve_port) as url,
    ):
        yield Platform(url, env, log, host_port)


def running_cluster(platform: Platform, tenant: str, key: str, name: str) -> None:
    """Create the cluster and wait until it runs."""
    created = platform.api("POST", f"/tenants/{tenant}/clusters", key, json={"name": name})
    assert created.status_code == 201, created.text
    deadline = time.monotonic() + CLUSTER_DEADLINE
    while time.monotonic() < deadline:
        got = platform.api("GET", f"/tenants/{tenant}/clusters/{name}", key)
        if got.json()["status"]["phase"] == "Running":
            return
        time.sleep(0.5)  # polling a condition with a deadline
    raise AssertionError(f"{tenant}/{name} not Running within {CLUSTER_DEADLINE:g} s")
