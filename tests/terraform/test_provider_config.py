"""The provider's settings: from its block or the environment, an API key or a token, and
what OpenTofu says when one is missing or both credentials are given."""

from __future__ import annotations

import pytest

from tests.terraform.conftest import Tenant, Tofu

pytestmark = pytest.mark.terraform

READ_TENANT = """
data "tenantplane_tenant" "this" {}
output "tenant" { value = data.tenantplane_tenant.this.name }
"""

SETTINGS = ("TENANTPLANE_URL", "TENANTPLANE_TENANT", "TENANTPLANE_API_KEY", "TENANTPLANE_TOKEN")


def without_settings(tofu: Tofu) -> None:
    for name in SETTINGS:
        tofu.env.pop(name, None)


def test_settings_from_the_provider_block(tofu: Tofu, tenant: Tenant) -> None:
    without_settings(tofu)
    tofu.configure(
        """
variable "url" {}
variable "tenant" {}
variable "api_key" { sensitive = true }
provider "tenantplane" {
  url     = var.url
  tenant  = var.tenant
  api_key = var.api_key
}
"""
        + READ_TENANT
    )
    tofu.env.update(TF_VAR_url=tenant.url, TF_VAR_tenant=tenant.name, TF_VAR_api_key=tenant.key)
    tofu.ok("apply", "-auto-approve", "-input=false")
    assert tofu.outputs() == {"tenant": tenant.name}


def test_a_token_from_the_environment(tofu: Tofu, tenant: Tenant) -> None:
    """TENANTPLANE_TOKEN is sent as the bearer credential (an API key is one too)."""
    del tofu.env["TENANTPLANE_API_KEY"]
    tofu.env["TENANTPLANE_TOKEN"] = tenant.key
    tofu.configure(READ_TENANT)
    tofu.ok("apply", "-auto-approve", "-input=false")
    assert tofu.outputs() == {"tenant": tenant.name}


def test_missing_settings_are_each_named(tofu: Tofu) -> None:
    without_settings(tofu)
    tofu.configure(READ_TENANT)
    planned = tofu.run("plan", "-input=false")
    assert planned.returncode == 1
    for error in ("Missing tenantplane URL", "Missing tenant", "Missing credential"):
        assert f"Error: {error}" in planned.stderr
    assert "TENANTPLANE_URL" in planned.stderr


def test_an_api_key_and_a_token_together_are_refused(tofu: Tofu, tenant: Tenant) -> None:
    tofu.env["TENANTPLANE_TOKEN"] = tenant.key
    tofu.configure(READ_TENANT)
    planned = tofu.run("plan", "-input=false")
    assert planned.returncode == 1
    assert "Error: Both an API key and a token" in planned.stderr


def test_a_url_that_is_not_http_is_refused(tofu: Tofu) -> None:
    tofu.env["TENANTPLANE_URL"] = "ftp://tenantplane.example.com"
    tofu.configure(READ_TENANT)
    planned = tofu.run("plan", "-input=false")
    assert planned.returncode == 1
    assert "Error: Invalid tenantplane provider configuration" in planned.stderr
    # OpenTofu wraps long lines.
    assert 'the base URL "ftp://tenantplane.example.com" is not an http(s) URL' in " ".join(
        planned.stderr.split()
    )
