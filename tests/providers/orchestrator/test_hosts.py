"""No two clusters share an external host: a host names a cluster's ingress, its API server's
certificate and its kubeconfig's server, so one shared by two clusters would send a tenant to
another tenant's cluster (issue 35, finding 6)."""

from __future__ import annotations

import itertools
import re
import uuid
from pathlib import Path

import pytest
from pydantic import ValidationError

from tenantplane.config import Settings
from tenantplane.providers.orchestrator import ClusterSpec, host_template_problem
from tenantplane.providers.orchestrator.vcluster_values import external_host

# Every name of up to three of these parts joined by "-": the names whose hyphens could be
# shifted between a cluster's name and its tenant's.
PARTS = ["a", "dev", "acme", "corp", "x1"]
NAMES = ["-".join(parts) for size in (1, 2, 3) for parts in itertools.product(PARTS, repeat=size)]


def hosts(template: str) -> dict[str, list[tuple[str, str]]]:
    seen: dict[str, list[tuple[str, str]]] = {}
    for cluster, tenant in itertools.product(NAMES, NAMES):
        spec = ClusterSpec(uuid.uuid4().hex, cluster, tenant, "1.34", 1, False, "1", "1Gi", "1Gi")
        seen.setdefault(external_host(spec, template), []).append((cluster, tenant))
    return seen


def shared(template: str) -> dict[str, list[tuple[str, str]]]:
    return {host: pairs for host, pairs in hosts(template).items() if len(pairs) > 1}


def test_the_default_template_gives_every_cluster_a_host_of_its_own() -> None:
    default = Settings.model_fields["cluster_host_template"].default
    assert len(NAMES) ** 2 == 24025
    assert shared(default) == {}


@pytest.mark.parametrize(
    "template",
    [
        "{cluster}.{tenant}.clusters.example.com",
        "api-{cluster}.{namespace}.example.com:6443",
        "{tenant}.{cluster}-k8s.example.com",
    ],
)
def test_accepted_templates_never_share_a_host(template: str) -> None:
    assert host_template_problem(template) is None
    assert shared(template) == {}


@pytest.mark.parametrize(
    "template",
    ["{cluster}-{tenant}.clusters.example.com", "{namespace}-{cluster}.example.com"],
)
def test_templates_that_share_hosts_are_refused(template: str, tmp_path: Path) -> None:
    # The refusal is right: this template gives two clusters one host.
    collisions = shared(template)
    assert collisions
    if "{cluster}-{tenant}" in template:
        assert ("dev-acme", "corp") in collisions["dev-acme-corp.clusters.example.com"]
        assert ("dev", "acme-corp") in collisions["dev-acme-corp.clusters.example.com"]
    with pytest.raises(ValidationError, match="labels of their own"):
        Settings(_env_file=None, data_dir=tmp_path, cluster_host_template=template)


def test_a_template_naming_the_cluster_must_name_its_tenant(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=re.escape("not {tenant}")):
        Settings(_env_file=None, data_dir=tmp_path, cluster_host_template="{cluster}.example.com")
