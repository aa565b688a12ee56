"""tenantplane_api_key through OpenTofu against a real server: create (the raw key in the
state, sensitive, and working), a plan with nothing to do, import by id (no raw key), a
change (a new key), revocation; a key revoked behind Terraform's back."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.terraform.conftest import Tenant, Tofu

pytestmark = pytest.mark.terraform


def key_config(role: str) -> str:
    return f"""
resource "tenantplane_api_key" "ci" {{
  display_name = "ci"
  role         = "{role}"
  expires_at   = "2030-12-31T23:59:59Z"
}}
"""


def managed_values(tofu: Tofu) -> dict[str, Any]:
    shown = json.loads(tofu.ok("show", "-json"))
    (resource,) = shown["values"]["root_module"]["resources"]
    values: dict[str, Any] = resource["values"]
    return values


def key_ids(tenant: Tenant) -> list[str]:
    with tenant.api() as api:
        listed = api.get(f"{tenant.path}/apikeys").raise_for_status().json()["items"]
    return [key["id"] for key in listed]


def authenticates(tenant: Tenant, key: str) -> int:
    """The status of a read of the tenant with ``key``."""
    with httpx.Client(base_url=f"{tenant.url}/api/v1") as api:
        return api.get(tenant.path, headers={"Authorization": f"Bearer {key}"}).status_code


def test_create_plan_import_replace_revoke(tofu: Tofu, tenant: Tenant) -> None:
    before = key_ids(tenant)
    tofu.configure(key_config("readonly"))
    applied = tofu.ok("apply", "-auto-approve", "-input=false")
    created = managed_values(tofu)
    assert created["key"].startswith("svc_")
    assert created["key"] not in applied  # sensitive: never printed
    assert authenticates(tenant, created["key"]) == 200
    with tenant.api() as api:
        read = api.get(f"{tenant.path}/apikeys/{created['id']}").raise_for_status().json()
    assert read["displayName"] == "ci"
    assert read["role"] == "readonly"
    assert created["expires_at"] == "2030-12-31T23:59:59Z"
    assert tofu.plan_exit_code() == 0

    # Imported by id: the same state but for the raw key, and still nothing to do.
    (tofu.workdir / "terraform.tfstate").unlink()
    tofu.ok("import", "-input=false", "tenantplane_api_key.ci", created["id"])
    imported = managed_values(tofu)
    assert imported["key"] is None
    assert {**imported, "key": created["key"], "last_used_at": None} == {
        **created,
        "last_used_at": None,
    }
    assert tofu.plan_exit_code() == 0

    # A change replaces the key: the old one stops working, the new one works.
    tofu.configure(key_config("admin"))
    planned = tofu.run("plan", "-detailed-exitcode", "-input=false")
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert "tenantplane_api_key.ci must be replaced" in planned.stdout
    tofu.ok("apply", "-auto-approve", "-input=false")
    replaced = managed_values(tofu)
    assert replaced["id"] != created["id"]
    assert authenticates(tenant, created["key"]) == 401
    assert authenticates(tenant, replaced["key"]) == 200
    assert tofu.plan_exit_code() == 0

    tofu.ok("destroy", "-auto-approve", "-input=false")
    assert authenticates(tenant, replaced["key"]) == 401
    assert key_ids(tenant) == before
    assert tofu.state_list() == []


def test_a_key_revoked_behind_terraforms_back_is_created_again(tofu: Tofu, tenant: Tenant) -> None:
    tofu.configure(key_config("readonly"))
    tofu.ok("apply", "-auto-approve", "-input=false")
    revoked = managed_values(tofu)["id"]
    with tenant.api() as api:
        api.delete(f"{tenant.path}/apikeys/{revoked}").raise_for_status()
    planned = tofu.run("plan", "-detailed-exitcode", "-input=false")
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert "tenantplane_api_key.ci will be created" in planned.stdout
    tofu.ok("apply", "-auto-approve", "-input=false")
    again = managed_values(tofu)
    assert again["id"] != revoked
    assert authenticates(tenant, again["key"]) == 200
