"""tenantplane_secret through OpenTofu against a real server: apply, a plan with nothing to
do, import into an empty state, a change, destroy; and what happens behind Terraform's back
(a deleted secret, a changed one, a refused credential)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.terraform.conftest import Tenant, Tofu, running_cluster, secret_of, synced

pytestmark = pytest.mark.terraform


ONE_TARGET = """
resource "tenantplane_secret" "db" {
  name        = "db"
  secret_path = "apps/db"
  sync = [{ cluster = "web", namespace = "apps" }]
}
"""

TWO_TARGETS = """
resource "tenantplane_secret" "db" {
  name        = "db"
  secret_path = "apps/db"
  sync = [
    { cluster = "web", namespace = "apps" },
    { cluster = "web", namespace = "jobs", secret_name = "db-copy" },
  ]
}
"""


@pytest.fixture
def cluster(tenant: Tenant) -> str:
    """A Running cluster of the tenant to sync into (the API refuses targets in clusters it
    lacks, and a secret synced into a cluster not ready yet takes a retry to settle)."""
    return running_cluster(tenant, "web")


def managed_values(tofu: Tofu) -> dict[str, Any]:
    """The secret's attributes as the state holds them (`tofu show -json`)."""
    shown = json.loads(tofu.ok("show", "-json"))
    (resource,) = shown["values"]["root_module"]["resources"]
    values: dict[str, Any] = resource["values"]
    return values


def test_apply_plan_import_change_destroy(tofu: Tofu, tenant: Tenant, cluster: str) -> None:
    tofu.configure(ONE_TARGET)
    tofu.ok("apply", "-auto-approve", "-input=false")
    created = synced(tenant, "db")
    assert created["secretPath"] == "apps/db"
    assert created["sync"] == [{"cluster": cluster, "namespace": "apps", "secretName": "db"}]
    assert tofu.plan_exit_code() == 0
    # The state as a refresh leaves it: the API's version (the sync controller's status
    # writes gave it new ones since the create answer) and phase.
    tofu.ok("apply", "-refresh-only", "-auto-approve", "-input=false")
    refreshed = managed_values(tofu)
    assert refreshed["resource_version"] == created["resourceVersion"]
    assert refreshed["phase"] == "Synced"

    # Imported by name into an empty state: the same state, and still nothing to do.
    (tofu.workdir / "terraform.tfstate").unlink()
    tofu.ok("import", "-input=false", "tenantplane_secret.db", "db")
    assert managed_values(tofu) == refreshed
    assert tofu.plan_exit_code() == 0

    tofu.configure(TWO_TARGETS)
    assert tofu.plan_exit_code() == 2
    tofu.ok("apply", "-auto-approve", "-input=false")
    changed = synced(tenant, "db")
    assert changed["sync"] == [
        {"cluster": cluster, "namespace": "apps", "secretName": "db"},
        {"cluster": cluster, "namespace": "jobs", "secretName": "db-copy"},
    ]
    assert tofu.plan_exit_code() == 0

    tofu.ok("destroy", "-auto-approve", "-input=false")
    assert secret_of(tenant, "db") is None
    with tenant.api() as api:
        assert api.get(f"{tenant.path}/secrets").raise_for_status().json()["items"] == []
    assert tofu.state_list() == []


def test_a_version_the_sync_status_alone_changed_does_not_stop_an_update(
    tofu: Tofu, tenant: Tenant, cluster: str
) -> None:
    """The state holds the create answer's version; the sync controller's status writes give
    the secret new ones. Applied without a refresh, the update's If-Match is stale (412), yet
    the path and targets are as Terraform read them: it is sent again with the current one."""
    tofu.configure(ONE_TARGET)
    tofu.ok("apply", "-auto-approve", "-input=false")
    written = managed_values(tofu)["resource_version"]
    assert synced(tenant, "db")["resourceVersion"] != written

    tofu.configure(TWO_TARGETS)
    tofu.ok("apply", "-refresh=false", "-auto-approve", "-input=false")
    changed = secret_of(tenant, "db")
    assert changed is not None
    assert [target["namespace"] for target in changed["sync"]] == ["apps", "jobs"]


def test_changes_behind_terraforms_back_show_in_the_plan(
    tofu: Tofu, tenant: Tenant, cluster: str
) -> None:
    """Targets replaced through the API: an update in place; the secret deleted: a create."""
    tofu.configure(ONE_TARGET)
    tofu.ok("apply", "-auto-approve", "-input=false")
    with tenant.api() as api:
        elsewhere = {"sync": [{"cluster": cluster, "namespace": "elsewhere"}]}
        api.patch(f"{tenant.path}/secrets/db", json=elsewhere).raise_for_status()
    planned = tofu.run("plan", "-detailed-exitcode", "-input=false")
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert "tenantplane_secret.db will be updated in-place" in planned.stdout
    assert '~ namespace   = "elsewhere" -> "apps"' in planned.stdout

    with tenant.api() as api:
        api.delete(f"{tenant.path}/secrets/db").raise_for_status()
    planned = tofu.run("plan", "-detailed-exitcode", "-input=false")
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert "tenantplane_secret.db will be created" in planned.stdout
    tofu.ok("apply", "-auto-approve", "-input=false")
    recreated = secret_of(tenant, "db")
    assert recreated is not None
    assert [target["namespace"] for target in recreated["sync"]] == ["apps"]
    assert tofu.plan_exit_code() == 0


def test_an_update_of_a_secret_changed_since_the_plan_is_refused(
    tofu: Tofu, tenant: Tenant, cluster: str
) -> None:
    """The saved plan's If-Match names the version it read; the API's 412 becomes the
    provider's error, and the change made behind Terraform's back is kept."""
    tofu.configure(ONE_TARGET)
    tofu.ok("apply", "-auto-approve", "-input=false")
    tofu.configure(TWO_TARGETS)
    tofu.ok("plan", "-input=false", "-out=change.tfplan")
    elsewhere = [{"cluster": cluster, "namespace": "elsewhere"}]
    with tenant.api() as api:
        api.patch(f"{tenant.path}/secrets/db", json={"sync": elsewhere}).raise_for_status()

    applied = tofu.run("apply", "-input=false", "change.tfplan")
    assert applied.returncode == 1, applied.stdout
    assert "secret db changed outside Terraform; refresh" in applied.stderr
    assert "412" in applied.stderr
    kept = secret_of(tenant, "db")
    assert kept is not None
    assert kept["sync"] == [{"cluster": cluster, "namespace": "elsewhere", "secretName": "db"}]

    # Refreshed, the plan shows the change made elsewhere and applies over it.
    assert tofu.plan_exit_code() == 2
    tofu.ok("apply", "-auto-approve", "-input=false")
    assert tofu.plan_exit_code() == 0


@pytest.mark.parametrize("refusal", [401, 403])
def test_a_refused_read_is_an_error_never_a_deleted_secret(
    tofu: Tofu, tenant: Tenant, other_tenant: Tenant, cluster: str, refusal: int
) -> None:
    """A 401 (a key the server does not know) or a 403 (another tenant's key) on refresh fails
    the plan; the state keeps the secret (were it dropped, the next apply would create it
    again)."""
    tofu.configure(ONE_TARGET)
    tofu.ok("apply", "-auto-approve", "-input=false")

    key = "svc_not-a-key" if refusal == 401 else other_tenant.key
    refused = tofu.run(
        "plan", "-detailed-exitcode", "-input=false", env={"TENANTPLANE_API_KEY": key}
    )
    assert refused.returncode == 1, refused.stdout
    assert "reading secret db failed" in refused.stderr
    assert f"{refusal}: " in refused.stderr
    assert tofu.state_list() == ["tenantplane_secret.db"]
    assert tofu.plan_exit_code() == 0


def test_importing_a_secret_that_does_not_exist_fails(tofu: Tofu) -> None:
    tofu.configure(ONE_TARGET)
    imported = tofu.run("import", "-input=false", "tenantplane_secret.db", "db")
    assert imported.returncode == 1, imported.stdout
    assert "Cannot import non-existent remote object" in imported.stderr
