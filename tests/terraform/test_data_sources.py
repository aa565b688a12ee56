"""tenantplane_versions, tenantplane_plans and tenantplane_tenant read by OpenTofu through the
provider, compared with what the API answers."""

from __future__ import annotations

import pytest

from tests.terraform.conftest import Tenant, Tofu

pytestmark = pytest.mark.terraform

DATA_SOURCES = """
data "tenantplane_versions" "all" {}
data "tenantplane_plans" "all" {}
data "tenantplane_tenant" "this" {}

output "default_version" { value = data.tenantplane_versions.all.default }
output "versions" { value = data.tenantplane_versions.all.versions }
output "plans" { value = data.tenantplane_plans.all.plans }
output "tenant" { value = data.tenantplane_tenant.this }
"""


def test_the_data_sources_read_what_the_api_answers(tofu: Tofu, tenant: Tenant) -> None:
    tofu.configure(DATA_SOURCES)
    tofu.ok("apply", "-auto-approve", "-input=false")
    outputs = tofu.outputs()
    with tenant.api() as api:
        versions = api.get("/versions").raise_for_status().json()
        plans = api.get("/plans").raise_for_status().json()
        read = api.get(tenant.path).raise_for_status().json()

    assert outputs["default_version"] == versions["default"]
    assert outputs["versions"] == [
        {
            "version": version["version"],
            "kubernetes_version": version["kubernetesVersion"],
            "default": version["default"],
            "retiring": version["retiring"],
        }
        for version in versions["items"]
    ]
    assert [plan["name"] for plan in outputs["plans"]] == [plan["name"] for plan in plans["items"]]
    for plan, answered in zip(outputs["plans"], plans["items"], strict=True):
        assert plan["limits"]["clusters"] == answered["limits"]["clusters"]
        assert plan["limits"]["memory"] == answered["limits"]["memory"]
        assert plan["prices"]["vcpu_hour"] == answered["prices"]["vcpuHour"]
        assert plan["prices"]["currency"] == answered["prices"]["currency"]
        assert [meter["name"] for meter in plan["prices"]["observability"]] == [
            meter["name"] for meter in answered["prices"]["observability"]
        ]
    assert outputs["tenant"] == {
        "name": tenant.name,
        "plan": read["plan"],
        "state": read["state"],
        "enforce_metrics_limit": read["enforceMetricsLimit"],
        "enforce_log_limit": read["enforceLogLimit"],
    }
    # Data sources only: nothing is managed, and a second plan has nothing to do.
    assert tofu.state_list() == [
        "data.tenantplane_plans.all",
        "data.tenantplane_tenant.this",
        "data.tenantplane_versions.all",
    ]
    assert tofu.plan_exit_code() == 0
