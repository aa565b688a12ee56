"""tenantplane_cluster (resource and data source) through OpenTofu against a real server:
create until Running, a plan with nothing to do, import, an upgrade and a resize waited for,
destroy until gone; high availability one way only, at plan time; an upgrade behind
Terraform's back shows in the plan."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.terraform.conftest import SMALL, Tenant, Tofu

pytestmark = pytest.mark.terraform


def cluster_config(
    version: str, cpu: str = SMALL["cpu"], high_availability: bool | None = None
) -> str:
    ha = (
        ""
        if high_availability is None
        else f"  high_availability = {str(high_availability).lower()}\n"
    )
    return f"""
resource "tenantplane_cluster" "web" {{
  name    = "web"
  version = "{version}"
{ha}  resources = {{ cpu = "{cpu}", memory = "{SMALL["memory"]}", storage = "{SMALL["storage"]}" }}
}}
"""


def cluster_of(tenant: Tenant, name: str) -> dict[str, Any] | None:
    return tenant.read(f"/clusters/{name}")


def managed_values(tofu: Tofu) -> dict[str, Any]:
    shown = json.loads(tofu.ok("show", "-json"))
    (resource,) = shown["values"]["root_module"]["resources"]
    values: dict[str, Any] = resource["values"]
    return values


def version_up_to_date(cluster: dict[str, Any]) -> bool:
    (condition,) = [c for c in cluster["status"]["conditions"] if c["type"] == "VersionUpToDate"]
    return bool(condition["status"] == "True")


def test_apply_plan_import_upgrade_resize_destroy(tofu: Tofu, tenant: Tenant) -> None:
    tofu.configure(cluster_config("1.32"))
    tofu.ok("apply", "-auto-approve", "-input=false")
    # Applied means Running: no wait of the test's own.
    created = cluster_of(tenant, "web")
    assert created is not None
    assert created["status"]["phase"] == "Running"
    assert created["version"] == "1.32"
    assert created["resources"] == SMALL
    state = managed_values(tofu)
    assert state["phase"] == "Running"
    assert state["kubernetes_version"].startswith("v1.32.")
    with tenant.api() as api:
        details = api.get(f"{tenant.path}/clusters/web/connection-details").raise_for_status()
    assert state["connection_details"] == {
        "endpoint": details.json()["endpoint"],
        "certificate_authority": details.json()["certificateAuthority"],
    }
    assert state["high_availability"] is False
    assert state["timeouts"] is None
    assert tofu.plan_exit_code() == 0

    # Imported by name into an empty state: the state a refresh gives, still nothing to do.
    tofu.ok("apply", "-refresh-only", "-auto-approve", "-input=false")
    refreshed = managed_values(tofu)
    (tofu.workdir / "terraform.tfstate").unlink()
    tofu.ok("import", "-input=false", "tenantplane_cluster.web", "web")
    assert managed_values(tofu) == refreshed
    assert tofu.plan_exit_code() == 0

    # An upgrade and a resize in one apply, which returns once both run.
    tofu.configure(cluster_config("1.33", cpu="2"))
    assert tofu.plan_exit_code() == 2
    tofu.ok("apply", "-auto-approve", "-input=false")
    changed = cluster_of(tenant, "web")
    assert changed is not None
    assert changed["version"] == "1.33"
    assert changed["status"]["phase"] == "Running"
    assert changed["status"]["kubernetesVersion"].startswith("v1.33.")
    assert version_up_to_date(changed)
    assert changed["resources"]["cpu"] == "2"
    assert changed["status"]["metrics"]["allocatable"]["cpu"] == "2"
    assert managed_values(tofu)["kubernetes_version"] == changed["status"]["kubernetesVersion"]
    assert tofu.plan_exit_code() == 0

    # Destroy returns once the cluster is gone.
    tofu.ok("destroy", "-auto-approve", "-input=false")
    assert cluster_of(tenant, "web") is None
    with tenant.api() as api:
        assert api.get(f"{tenant.path}/clusters").raise_for_status().json()["items"] == []
    assert tofu.state_list() == []


def test_high_availability_cannot_be_turned_off_which_the_plan_says(
    tofu: Tofu, tenant: Tenant
) -> None:
    tofu.configure(cluster_config("1.33", high_availability=True))
    tofu.ok("apply", "-auto-approve", "-input=false")
    created = cluster_of(tenant, "web")
    assert created is not None
    assert created["status"]["haConfigured"] is True
    version = created["resourceVersion"]

    tofu.configure(cluster_config("1.33", high_availability=False))
    planned = tofu.run("plan", "-detailed-exitcode", "-input=false")
    assert planned.returncode == 1, planned.stdout
    assert "High availability cannot be turned off" in planned.stderr
    # Refused before anything was asked of the API.
    kept = cluster_of(tenant, "web")
    assert kept is not None
    assert kept["highAvailability"] is True
    assert kept["resourceVersion"] == version
    # destroy plans with the configuration too: with HA kept on, it goes.
    tofu.configure(cluster_config("1.33", high_availability=True))
    tofu.ok("destroy", "-auto-approve", "-input=false")
    assert cluster_of(tenant, "web") is None


def test_turning_high_availability_on_replaces_the_cluster(tofu: Tofu, tenant: Tenant) -> None:
    tofu.configure(cluster_config("1.33"))
    tofu.ok("apply", "-auto-approve", "-input=false")
    tofu.configure(cluster_config("1.33", high_availability=True))
    planned = tofu.run("plan", "-detailed-exitcode", "-input=false")
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert "tenantplane_cluster.web must be replaced" in planned.stdout
    assert "# forces replacement" in planned.stdout


def test_an_upgrade_behind_terraforms_back_shows_in_the_plan(tofu: Tofu, tenant: Tenant) -> None:
    tofu.configure(cluster_config("1.32"))
    tofu.ok("apply", "-auto-approve", "-input=false")
    with tenant.api() as api:
        etag = api.get(f"{tenant.path}/clusters/web").raise_for_status().headers["ETag"]
        api.patch(
            f"{tenant.path}/clusters/web", json={"version": "1.33"}, headers={"If-Match": etag}
        ).raise_for_status()
    planned = tofu.run("plan", "-detailed-exitcode", "-input=false")
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert "tenantplane_cluster.web will be updated in-place" in planned.stdout
    assert '~ version            = "1.33" -> "1.32"' in planned.stdout


def test_the_data_source_reads_a_cluster_by_name(tofu: Tofu, tenant: Tenant) -> None:
    tofu.configure(
        cluster_config("1.33")
        + """
data "tenantplane_cluster" "web" {
  name = tenantplane_cluster.web.name
}

output "read" { value = data.tenantplane_cluster.web }
"""
    )
    tofu.ok("apply", "-auto-approve", "-input=false")
    read = tofu.outputs()["read"]
    cluster = cluster_of(tenant, "web")
    assert cluster is not None
    assert read["version"] == "1.33"
    assert read["phase"] == "Running"
    assert read["high_availability"] is False
    assert read["resources"] == SMALL
    assert read["kubernetes_version"] == cluster["status"]["kubernetesVersion"]
    assert read["connection_details"]["endpoint"] == cluster["status"]["endpoint"]
    assert read["created_at"] == cluster["createdAt"]


def test_what_the_configuration_leaves_out_is_the_platforms_default(
    tofu: Tofu, tenant: Tenant
) -> None:
    tofu.configure('resource "tenantplane_cluster" "web" {\n  name = "web"\n}\n')
    tofu.ok("apply", "-auto-approve", "-input=false")
    with tenant.api() as api:
        default = api.get("/versions").raise_for_status().json()["default"]
    state = managed_values(tofu)
    cluster = cluster_of(tenant, "web")
    assert cluster is not None
    assert state["version"] == cluster["version"] == default
    assert state["resources"] == cluster["resources"]
    assert state["high_availability"] is False
    assert tofu.plan_exit_code() == 0


def test_a_create_that_times_out_leaves_the_cluster_tainted(tofu: Tofu, tenant: Tenant) -> None:
    """The wait gives up (a timeout no cluster can be Running within); the cluster stays in
    the state, tainted, so the next apply replaces it rather than forgetting it."""
    tofu.configure(
        'resource "tenantplane_cluster" "web" {\n'
        '  name     = "web"\n'
        '  timeouts = { create = "1ms" }\n'
        "}\n"
    )
    applied = tofu.run("apply", "-auto-approve", "-input=false")
    assert applied.returncode == 1, applied.stdout
    assert "waiting for the new cluster web failed" in applied.stderr
    assert "timed out after 1ms waiting for cluster web to run as configured" in applied.stderr
    assert tofu.state_list() == ["tenantplane_cluster.web"]
    planned = tofu.run("plan", "-detailed-exitcode", "-input=false")
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert "tenantplane_cluster.web is tainted, so it must be replaced" in planned.stdout


def test_an_update_of_a_cluster_changed_since_the_plan_is_refused(
    tofu: Tofu, tenant: Tenant
) -> None:
    """A saved plan's If-Match names the version it read: a resize made through the API
    since is a real change (412, kept); a new version for what Terraform does not manage
    (status, alerts) is not."""
    tofu.configure(cluster_config("1.32"))
    tofu.ok("apply", "-auto-approve", "-input=false")
    tofu.configure(cluster_config("1.33"))
    tofu.ok("plan", "-input=false", "-out=change.tfplan")
    with tenant.api() as api:
        etag = api.get(f"{tenant.path}/clusters/web").raise_for_status().headers["ETag"]
        api.patch(
            f"{tenant.path}/clusters/web",
            json={"resources": {"cpu": "3"}},
            headers={"If-Match": etag},
        ).raise_for_status()
    applied = tofu.run("apply", "-input=false", "change.tfplan")
    assert applied.returncode == 1, applied.stdout
    assert "cluster web changed outside Terraform; refresh" in applied.stderr
    kept = cluster_of(tenant, "web")
    assert kept is not None
    assert (kept["version"], kept["resources"]["cpu"]) == ("1.32", "3")

    # Refreshed into the state; then a field Terraform does not manage (alerts) changes,
    # as the reconciler's status writes do: the update without a refresh meets a 412 that
    # changed nothing Terraform manages, and goes through with the current version.
    tofu.ok("apply", "-refresh-only", "-auto-approve", "-input=false")
    written = managed_values(tofu)["resource_version"]
    with tenant.api() as api:
        etag = api.get(f"{tenant.path}/clusters/web").raise_for_status().headers["ETag"]
        alerted = api.patch(
            f"{tenant.path}/clusters/web",
            json={"alerts": {"cpu": "high"}},
            headers={"If-Match": etag},
        ).raise_for_status()
    assert alerted.json()["resourceVersion"] != written
    tofu.ok("apply", "-refresh=false", "-auto-approve", "-input=false")
    upgraded = cluster_of(tenant, "web")
    assert upgraded is not None
    assert (upgraded["version"], upgraded["resources"]["cpu"]) == ("1.33", "1")
    assert upgraded["alerts"] == {"cpu": "high"}


@pytest.mark.parametrize("refusal", [401, 403])
def test_a_refused_read_is_an_error_never_a_deleted_cluster(
    tofu: Tofu, tenant: Tenant, other_tenant: Tenant, refusal: int
) -> None:
    tofu.configure(cluster_config("1.33"))
    tofu.ok("apply", "-auto-approve", "-input=false")
    key = "svc_not-a-key" if refusal == 401 else other_tenant.key
    refused = tofu.run(
        "plan", "-detailed-exitcode", "-input=false", env={"TENANTPLANE_API_KEY": key}
    )
    assert refused.returncode == 1, refused.stdout
    assert "reading cluster web failed" in refused.stderr
    assert f"{refusal}: " in refused.stderr
    assert tofu.state_list() == ["tenantplane_cluster.web"]
    assert tofu.plan_exit_code() == 0


def test_the_data_source_of_a_cluster_the_tenant_lacks_fails(tofu: Tofu) -> None:
    tofu.configure('data "tenantplane_cluster" "gone" {\n  name = "gone"\n}\n')
    planned = tofu.run("plan", "-input=false")
    assert planned.returncode == 1, planned.stdout
    assert "reading cluster gone failed" in planned.stderr
    assert "404" in planned.stderr
