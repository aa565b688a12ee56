"""The five alerting resources through OpenTofu against a real server: applied together (one
configuration ETag that every write bumps), a plan with nothing to do, import into an empty
state, a change of each in one apply, destroy; a receiver deleted or changed behind
Terraform's back."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.terraform.conftest import Tenant, Tofu

pytestmark = pytest.mark.terraform

SLACK = "https://hooks.slack.com/services/T000/B000/XXXX"


def alerting(channel: str, severity: str, resolve_timeout: str, hours: str) -> str:
    """Every alerting resource, written as a user would: jsonencode for the JSON values."""
    start, end = hours.split("-")
    return f"""
resource "tenantplane_alerting_global" "this" {{
  settings = jsonencode({{ resolve_timeout = "{resolve_timeout}" }})
}}

resource "tenantplane_alerting_template" "slack" {{
  filename = "slack.tmpl"
  contents = <<-EOT
    {{{{ define "slack.title" }}}}[{{{{ .Status }}}}] {{{{ .CommonLabels.alertname }}}}{{{{ end }}}}
  EOT
}}

resource "tenantplane_alerting_time_interval" "office" {{
  name = "office-hours"
  time_intervals = jsonencode([{{
    weekdays = ["monday:friday"]
    times    = [{{ start_time = "{start}", end_time = "{end}" }}]
  }}])
}}

resource "tenantplane_alerting_receiver" "slack" {{
  name = "slack"
  integrations = jsonencode({{
    slack_configs = [{{
      api_url       = "{SLACK}"
      channel       = "{channel}"
      send_resolved = true
      title         = "{{{{ template \\"slack.title\\" . }}}}"
      # <, > and & as jsonencode writes them (\u003c, \u003e, \u0026): an import reads
      # them back the same way, or its plan would not be empty.
      text          = "<{{{{ .CommonLabels.alertname }}}}> & {{{{ len .Alerts }}}} more"
    }}]
  }})
  depends_on = [tenantplane_alerting_template.slack]
}}

resource "tenantplane_alerting_route" "critical" {{
  index = 0
  route = jsonencode({{
    receiver            = tenantplane_alerting_receiver.slack.name
    matchers            = ["severity=\\"{severity}\\""]
    active_time_intervals = [tenantplane_alerting_time_interval.office.name]
  }})
}}
"""


FIRST = alerting("#alerts", "critical", "5m", "09:00-17:00")
CHANGED = alerting("#oncall", "page", "10m", "08:00-18:00")
ADDRESSES = {
    "tenantplane_alerting_global.this": "global",
    "tenantplane_alerting_template.slack": "slack.tmpl",
    "tenantplane_alerting_time_interval.office": "office-hours",
    "tenantplane_alerting_receiver.slack": "slack",
    "tenantplane_alerting_route.critical": "0",
}


def config_of(tenant: Tenant) -> dict[str, Any]:
    with tenant.api() as api:
        config: dict[str, Any] = api.get(f"{tenant.path}/alerting/config").raise_for_status().json()
    return config


def receiver_of(tenant: Tenant, name: str) -> dict[str, Any] | None:
    return tenant.read(f"/alerting/receivers/{name}")


def state_values(tofu: Tofu) -> dict[str, dict[str, Any]]:
    shown = json.loads(tofu.ok("show", "-json"))
    return {
        resource["address"]: resource["values"]
        for resource in shown["values"]["root_module"]["resources"]
    }


def test_apply_plan_import_change_destroy(tofu: Tofu, tenant: Tenant) -> None:
    before = config_of(tenant)
    tofu.configure(FIRST)
    # Five writes in one apply, each bumping the configuration's one ETag: none is refused.
    tofu.ok("apply", "-auto-approve", "-input=false")
    config = config_of(tenant)
    (slack,) = [receiver for receiver in config["receivers"] if receiver["name"] == "slack"]
    assert slack["slack_configs"][0]["api_url"] == SLACK
    assert slack["slack_configs"][0]["channel"] == "#alerts"
    assert slack["slack_configs"][0]["text"].startswith("<{{ .CommonLabels.alertname }}> &")
    assert config["route"]["routes"][0]["receiver"] == "slack"
    assert config["route"]["routes"][0]["active_time_intervals"] == ["office-hours"]
    assert config["global"] == {"resolve_timeout": "5m"}
    assert "slack.title" in config["templates"]["slack.tmpl"]
    assert tofu.plan_exit_code() == 0
    applied = state_values(tofu)

    # Imported by their natural ids into an empty state: the same state, nothing to do.
    (tofu.workdir / "terraform.tfstate").unlink()
    for address, natural_id in ADDRESSES.items():
        tofu.ok("import", "-input=false", address, natural_id)
    imported = state_values(tofu)
    assert sorted(imported) == sorted(ADDRESSES)
    for address in ADDRESSES:
        assert set(imported[address]) == set(applied[address])
    assert tofu.plan_exit_code() == 0

    # Every one changed in one apply.
    tofu.configure(CHANGED)
    assert tofu.plan_exit_code() == 2
    tofu.ok("apply", "-auto-approve", "-input=false")
    config = config_of(tenant)
    (slack,) = [receiver for receiver in config["receivers"] if receiver["name"] == "slack"]
    assert slack["slack_configs"][0]["channel"] == "#oncall"
    assert config["route"]["routes"][0]["matchers"] == ['severity="page"']
    assert config["global"] == {"resolve_timeout": "10m"}
    (office,) = config["time_intervals"]
    assert office["time_intervals"][0]["times"] == [{"start_time": "08:00", "end_time": "18:00"}]
    assert tofu.plan_exit_code() == 0

    tofu.ok("destroy", "-auto-approve", "-input=false")
    assert tofu.state_list() == []
    after = config_of(tenant)
    assert after["receivers"] == before["receivers"]
    assert after["route"] == before["route"]
    assert after["templates"] == before["templates"] == {}
    assert after["time_intervals"] == before["time_intervals"] == []
    assert after["global"] == {}


def test_a_receiver_deleted_behind_terraforms_back_shows_in_the_plan(
    tofu: Tofu, tenant: Tenant
) -> None:
    tofu.configure(FIRST)
    tofu.ok("apply", "-auto-approve", "-input=false")
    with tenant.api() as api:
        # The route refers to the receiver (409 RECEIVER_IN_USE): it goes first.
        api.delete(f"{tenant.path}/alerting/routes/0").raise_for_status()
        api.delete(f"{tenant.path}/alerting/receivers/slack").raise_for_status()
    planned = tofu.run("plan", "-detailed-exitcode", "-input=false")
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert "tenantplane_alerting_receiver.slack will be created" in planned.stdout
    assert "tenantplane_alerting_route.critical will be created" in planned.stdout
    tofu.ok("apply", "-auto-approve", "-input=false")
    recreated = receiver_of(tenant, "slack")
    assert recreated is not None
    assert recreated["slack_configs"][0]["channel"] == "#alerts"
    assert tofu.plan_exit_code() == 0


def test_an_update_of_a_receiver_changed_outside_terraform_is_refused(
    tofu: Tofu, tenant: Tenant
) -> None:
    """Planned before the receiver was changed through the API: the update would overwrite
    that change, so it is refused, and the change is kept."""
    tofu.configure(FIRST)
    tofu.ok("apply", "-auto-approve", "-input=false")
    tofu.configure(CHANGED)
    tofu.ok("plan", "-input=false", "-out=change.tfplan")
    elsewhere = {"slack_configs": [{"api_url": SLACK, "channel": "#elsewhere"}]}
    with tenant.api() as api:
        api.put(f"{tenant.path}/alerting/receivers/slack", json=elsewhere).raise_for_status()

    applied = tofu.run("apply", "-input=false", "change.tfplan")
    assert applied.returncode == 1, applied.stdout
    assert "receiver slack changed outside Terraform; refresh" in applied.stderr
    kept = receiver_of(tenant, "slack")
    assert kept is not None
    assert kept["slack_configs"][0]["channel"] == "#elsewhere"

    # Refreshed, the plan shows the change made elsewhere and applies over it.
    assert tofu.plan_exit_code() == 2
    tofu.ok("apply", "-auto-approve", "-input=false")
    changed = receiver_of(tenant, "slack")
    assert changed is not None
    assert changed["slack_configs"][0]["channel"] == "#oncall"
    assert tofu.plan_exit_code() == 0


def test_creating_over_an_existing_receiver_is_refused(tofu: Tofu, tenant: Tenant) -> None:
    theirs = {"webhook_configs": [{"url": "https://example.com/hook"}]}
    with tenant.api() as api:
        api.put(f"{tenant.path}/alerting/receivers/slack", json=theirs).raise_for_status()
    tofu.configure(FIRST)
    applied = tofu.run("apply", "-auto-approve", "-input=false")
    assert applied.returncode == 1, applied.stdout
    assert "receiver slack already exists: import it to manage it" in applied.stderr
    kept = receiver_of(tenant, "slack")
    assert kept is not None
    assert kept["webhook_configs"][0]["url"] == "https://example.com/hook"
