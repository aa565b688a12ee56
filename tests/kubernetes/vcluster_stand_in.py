"""A stand-in for vCluster's syncer, which cannot run on the bed (no containers): it writes
what vCluster writes at run time, the kubeconfig Secret ``vc-<release>``, pointing at the bed's
stand-in tenant cluster (a real API server)."""

from __future__ import annotations

import base64
import threading
from typing import Any

import yaml
from lightkube import ApiError
from lightkube.models.meta_v1 import ObjectMeta, OwnerReference
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Secret, Service

from tenantplane.providers.kube import HelmRelease
from tests.kubernetes.conftest import Bed


def as_manifest(resource: Any) -> dict[str, Any]:
    """A generic resource (lightkube's, untyped) as the dict it holds."""
    document: dict[str, Any] = resource.to_dict()
    return document


class VClusterStandIn:
    """Writes ``vc-<release>`` as vCluster's syncer does once its control plane is up
    (loft-sh/vcluster pkg/util/kubeconfig/kubeconfig.go, pkg/setup/config.go): keys ``config``
    (a kubeconfig whose server is ``exportKubeConfig.server``, else https://localhost:8443) and
    ``certificate-authority``, labelled ``app=vcluster``, ``vcluster-name=<release>`` and owned
    by the release's Service (so it goes when the chart is uninstalled). The kubeconfig's
    credentials are those of the bed's stand-in tenant cluster, which it then reaches."""

    def __init__(self, bed: Bed) -> None:
        self.client = bed.client()
        tenant_cluster = yaml.safe_load(bed.tenant_cluster_kubeconfig.read_text())
        self.ca_pem = base64.b64decode(
            tenant_cluster["clusters"][0]["cluster"]["certificate-authority-data"]
        )
        self.user = tenant_cluster["users"][0]["user"]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> VClusterStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        self.client.close()

    def _run(self) -> None:
        while not self.stop.wait(0.5):
            for release in self.client.list(HelmRelease, namespace="*"):
                try:
                    self._write_for(as_manifest(release))
                except ApiError as error:
                    if error.status.code not in (404, 409):
                        raise

    def _write_for(self, release: dict[str, Any]) -> None:
        name, namespace = release["metadata"]["name"], release["metadata"]["namespace"]
        control_plane = self.client.get(Deployment, name, namespace=namespace)
        if not (control_plane.status and control_plane.status.readyReplicas):
            return
        service = self.client.get(Service, name, namespace=namespace)
        values = release["spec"].get("values") or {}
        server = (values.get("exportKubeConfig") or {}).get("server") or "https://localhost:8443"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "my-vcluster",
                    "cluster": {
                        "server": server,
                        "certificate-authority-data": base64.b64encode(self.ca_pem).decode(),
                    },
                }
            ],
            "users": [{"name": "my-vcluster", "user": self.user}],
            "contexts": [
                {
                    "name": "my-vcluster",
                    "context": {"cluster": "my-vcluster", "user": "my-vcluster"},
                }
            ],
            "current-context": "my-vcluster",
        }
        assert service.metadata is not None
        assert service.metadata.uid is not None
        self.client.create(
            Secret(
                metadata=ObjectMeta(
                    name=f"vc-{name}",
                    namespace=namespace,
                    labels={"app": "vcluster", "vcluster-name": name},
                    ownerReferences=[
                        OwnerReference(
                            apiVersion="v1", kind="Service", name=name, uid=service.metadata.uid
                        )
                    ],
                ),
                data={
                    "config": base64.b64encode(yaml.safe_dump(config).encode()).decode(),
                    "certificate-authority": base64.b64encode(self.ca_pem).decode(),
                },
            )
        )
