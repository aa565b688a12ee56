"""tenantplane_member through OpenTofu against a real server: add, a plan with nothing to do,
import by email, a role change, removal; a role changed or a member removed behind
Terraform's back."""

from __future__ import annotations

from typing import Any

import pytest

from tests.terraform.conftest import Tenant, Tofu

pytestmark = pytest.mark.terraform


def member_config(role: str, email: str = "dev@example.com") -> str:
    return f"""
resource "tenantplane_member" "dev" {{
  email = "{email}"
  role  = "{role}"
}}
"""


def member_of(tenant: Tenant, email: str) -> dict[str, Any] | None:
    return tenant.read(f"/members/{email}")


def emails(tenant: Tenant) -> list[str]:
    with tenant.api() as api:
        listed = api.get(f"{tenant.path}/members").raise_for_status().json()["items"]
    return [member["email"] for member in listed]


def test_add_plan_import_change_role_remove(tofu: Tofu, tenant: Tenant) -> None:
    before = emails(tenant)
    tofu.configure(member_config("readonly"))
    tofu.ok("apply", "-auto-approve", "-input=false")
    assert member_of(tenant, "dev@example.com") == {"email": "dev@example.com", "role": "readonly"}
    assert tofu.plan_exit_code() == 0

    (tofu.workdir / "terraform.tfstate").unlink()
    tofu.ok("import", "-input=false", "tenantplane_member.dev", "dev@example.com")
    assert tofu.plan_exit_code() == 0

    tofu.configure(member_config("admin"))
    assert tofu.plan_exit_code() == 2
    tofu.ok("apply", "-auto-approve", "-input=false")
    assert member_of(tenant, "dev@example.com") == {"email": "dev@example.com", "role": "admin"}
    assert tofu.plan_exit_code() == 0

    tofu.ok("destroy", "-auto-approve", "-input=false")
    assert member_of(tenant, "dev@example.com") is None
    assert emails(tenant) == before
    assert tofu.state_list() == []


def test_an_email_spelled_in_other_case_is_the_same_member(tofu: Tofu, tenant: Tenant) -> None:
    tofu.configure(member_config("readonly", email="Dev@Example.com"))
    tofu.ok("apply", "-auto-approve", "-input=false")
    assert member_of(tenant, "dev@example.com") is not None
    assert tofu.plan_exit_code() == 0


def test_changes_behind_terraforms_back(tofu: Tofu, tenant: Tenant) -> None:
    """A role changed through the API: an update in place, and a saved plan made before it
    is refused (412); the member removed: added again."""
    tofu.configure(member_config("readonly"))
    tofu.ok("apply", "-auto-approve", "-input=false")
    tofu.configure(member_config("admin"))
    tofu.ok("plan", "-input=false", "-out=change.tfplan")
    with tenant.api() as api:
        api.patch(
            f"{tenant.path}/members/dev@example.com", json={"role": "admin"}
        ).raise_for_status()
        api.patch(
            f"{tenant.path}/members/dev@example.com", json={"role": "readonly"}
        ).raise_for_status()
    applied = tofu.run("apply", "-input=false", "change.tfplan")
    assert applied.returncode == 1, applied.stdout
    assert "member dev@example.com changed outside Terraform; refresh" in applied.stderr

    with tenant.api() as api:
        api.delete(f"{tenant.path}/members/dev@example.com").raise_for_status()
    planned = tofu.run("plan", "-detailed-exitcode", "-input=false")
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert "tenantplane_member.dev will be created" in planned.stdout
    tofu.ok("apply", "-auto-approve", "-input=false")
    assert member_of(tenant, "dev@example.com") == {"email": "dev@example.com", "role": "admin"}
