"""The vCluster chart the platform pins is the one the bed runs, and it runs every Kubernetes
version the catalogue offers (the chart maps each minor to an image: K8SVersionMap in the
vCluster module's config/default_extra_values.go, listed by scripts/testbed)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tenantplane.catalogue.versions import load_versions
from tenantplane.config import Settings

pytestmark = pytest.mark.kubernetes

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("TENANTPLANE_TESTBED_CACHE", "/var/cache/tenantplane-testbed"))


def bed_chart_version() -> str:
    go_mod = (ROOT / "tools" / "testbed" / "vcluster" / "go.mod").read_text(encoding="utf-8")
    found = re.search(r"^require github\.com/loft-sh/vcluster v(\S+)$", go_mod, re.MULTILINE)
    assert found is not None, "tools/testbed/vcluster/go.mod requires no vCluster version"
    return found.group(1)


def test_the_bed_runs_the_chart_version_the_platform_pins() -> None:
    pinned = Settings.model_fields["vcluster_chart_version"].default
    assert pinned == bed_chart_version()


def test_the_chart_runs_every_kubernetes_version_the_catalogue_offers() -> None:
    listed = CACHE / f"vcluster-v{bed_chart_version()}" / "kubernetes-versions"
    assert listed.is_file(), f"{listed} is missing: run scripts/testbed build vcluster"
    mapped = listed.read_text(encoding="utf-8").split()
    offered = [supported.version for supported in load_versions().versions]
    assert [version for version in offered if version not in mapped] == []
