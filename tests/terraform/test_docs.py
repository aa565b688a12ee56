"""The provider's registry docs (clients/terraform/docs) against its examples and schema,
and the examples run for real."""

from __future__ import annotations

import json
import re
import shutil
from typing import Any

import pytest

from tests.terraform.conftest import PROVIDER_MODULE, Tenant, Tofu, running_cluster, synced

pytestmark = pytest.mark.terraform

DOCS = PROVIDER_MODULE / "docs"
EXAMPLES = PROVIDER_MODULE / "examples"
SLACK_WEBHOOK = "https://hooks.slack.com/services/T000/B000/XXXX"
FENCED = re.compile(r"^```(terraform|shell)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
# Each page and the example files it shows, in order.
PAGES = {
    "index.md": ["provider/provider.tf"],
    "data-sources/versions.md": ["data-sources/tenantplane_versions/data-source.tf"],
    "data-sources/plans.md": ["data-sources/tenantplane_plans/data-source.tf"],
    "data-sources/tenant.md": ["data-sources/tenantplane_tenant/data-source.tf"],
    "data-sources/cluster.md": ["data-sources/tenantplane_cluster/data-source.tf"],
    "data-sources/secrets.md": ["data-sources/tenantplane_secrets/data-source.tf"],
    "resources/secret.md": [
        "resources/tenantplane_secret/resource.tf",
        "resources/tenantplane_secret/import.sh",
    ],
    "resources/cluster.md": [
        "resources/tenantplane_cluster/resource.tf",
        "resources/tenantplane_cluster/import.sh",
    ],
    "resources/member.md": [
        "resources/tenantplane_member/resource.tf",
        "resources/tenantplane_member/import.sh",
    ],
    "resources/alerting_receiver.md": [
        "resources/tenantplane_alerting_receiver/resource.tf",
        "resources/tenantplane_alerting_receiver/import.sh",
    ],
    "resources/alerting_route.md": [
        "resources/tenantplane_alerting_route/resource.tf",
        "resources/tenantplane_alerting_route/import.sh",
    ],
    "resources/alerting_global.md": [
        "resources/tenantplane_alerting_global/resource.tf",
        "resources/tenantplane_alerting_global/import.sh",
    ],
    "resources/alerting_template.md": [
        "resources/tenantplane_alerting_template/resource.tf",
        "resources/tenantplane_alerting_template/import.sh",
    ],
    "resources/alerting_time_interval.md": [
        "resources/tenantplane_alerting_time_interval/resource.tf",
        "resources/tenantplane_alerting_time_interval/import.sh",
    ],
    "resources/api_key.md": [
        "resources/tenantplane_api_key/resource.tf",
        "resources/tenantplane_api_key/import.sh",
    ],
}


def test_every_page_and_example_is_listed() -> None:
    assert sorted(str(page.relative_to(DOCS)) for page in DOCS.rglob("*.md")) == sorted(PAGES)
    examples = sorted(str(path.relative_to(EXAMPLES)) for path in EXAMPLES.rglob("*.*"))
    assert examples == sorted(example for shown in PAGES.values() for example in shown)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_each_page_shows_its_examples_as_they_are(page: str) -> None:
    """The examples (which tests apply) are what the pages show, before the other blocks."""
    blocks = [body for _, body in FENCED.findall((DOCS / page).read_text())]
    shown = [(EXAMPLES / example).read_text() for example in PAGES[page]]
    assert blocks[: len(shown)] == shown


def documented(page: str) -> set[str]:
    return set(re.findall(r"^\s*- `([a-z_]+)`", (DOCS / page).read_text(), re.MULTILINE))


def attribute_names(block: dict[str, Any]) -> set[str]:
    """Every attribute of a schema block, nested ones too."""
    names: set[str] = set()
    for name, attribute in block.get("attributes", {}).items():
        names.add(name)
        nested = attribute.get("nested_type")
        if nested:
            names |= attribute_names(nested)
    return names


def test_the_pages_document_every_attribute_of_the_schema(tofu: Tofu) -> None:
    """From the provider's own schema (`tofu providers schema -json`): every attribute is on its
    page, and nothing documented is missing from the schema."""
    tofu.configure("")
    (schemas,) = json.loads(tofu.ok("providers", "schema", "-json"))["provider_schemas"].values()
    expected = {"index.md": attribute_names(schemas["provider"]["block"])}
    for name, schema in schemas["data_source_schemas"].items():
        expected[f"data-sources/{name.removeprefix('tenantplane_')}.md"] = attribute_names(
            schema["block"]
        )
    for name, schema in schemas["resource_schemas"].items():
        expected[f"resources/{name.removeprefix('tenantplane_')}.md"] = attribute_names(
            schema["block"]
        )
    assert sorted(expected) == sorted(PAGES)
    for page, names in expected.items():
        # A page may name several attributes on one line (`cpu`, `memory`, `storage`).
        text = (DOCS / page).read_text()
        missing = {name for name in names if f"`{name}`" not in text}
        assert not missing, f"{page} does not document {sorted(missing)}"
        assert documented(page) <= names, f"{page} documents {sorted(documented(page) - names)}"


def test_the_provider_example_is_valid(tofu: Tofu) -> None:
    shutil.copy(EXAMPLES / "provider" / "provider.tf", tofu.workdir / "main.tf")
    tofu.ok("validate")


def test_the_data_source_and_resource_examples_apply(tofu: Tofu, tenant: Tenant) -> None:
    """The examples together, against a tenant with the cluster web they sync into."""
    running_cluster(tenant, "web")
    examples = [path for path in EXAMPLES.rglob("*.tf") if path.parent.name != "provider"]
    tofu.configure("\n".join(path.read_text() for path in sorted(examples)))
    tofu.ok("apply", "-auto-approve", "-input=false")
    outputs = tofu.outputs()
    assert outputs["plan"] == "starter"
    assert outputs["default_version"] in outputs["supported_versions"]
    assert set(outputs["cluster_limits"]) == {"starter", "pro", "business", "enterprise"}
    secret = synced(tenant, "db")
    assert [target["secretName"] for target in secret["sync"]] == ["db", "db-credentials"]
    assert tofu.plan_exit_code() == 0

    # Each resource imported as its example says, into an empty state (an id the API
    # chose, such as an API key's, taken from the state the apply left).
    chosen_ids = {
        resource["address"]: resource["values"]["id"]
        for resource in json.loads(tofu.ok("show", "-json"))["values"]["root_module"]["resources"]
        if resource["mode"] == "managed" and "id" in resource["values"]
    }
    (tofu.workdir / "terraform.tfstate").unlink()
    for script in sorted(EXAMPLES.rglob("import.sh")):
        (command,) = [
            line.split() for line in script.read_text().splitlines() if line.startswith("tofu ")
        ]
        *verb, address, example_id = command[1:]
        tofu.ok(*verb, address, chosen_ids.get(address, example_id))
    assert tofu.plan_exit_code() == 0
    tofu.ok("destroy", "-auto-approve", "-input=false")


def test_the_complete_example_in_docs_clients_md_applies(tofu: Tofu, tenant: Tenant) -> None:
    """The cluster, the secret synced into it and the Slack receivers routed by severity:
    applied, a plan with nothing to do, destroyed leaving nothing."""
    clients_md = (PROVIDER_MODULE.parents[1] / "docs" / "clients.md").read_text()
    section = clients_md[clients_md.index("## Terraform/OpenTofu provider") :]
    (example,) = [body for kind, body in FENCED.findall(section) if kind == "terraform"]
    tofu.env["TF_VAR_slack_webhook_url"] = SLACK_WEBHOOK
    (tofu.workdir / "main.tf").write_text(example)
    tofu.ok("apply", "-auto-approve", "-input=false")

    cluster = tenant.read("/clusters/web")
    alerting = tenant.read("/alerting/config")
    assert cluster is not None
    assert alerting is not None
    with tenant.api() as api:
        versions = api.get("/versions").raise_for_status().json()
    assert cluster["status"]["phase"] == "Running"
    assert tofu.outputs()["web_endpoint"] == cluster["status"]["endpoint"]
    assert cluster["version"] == versions["default"]
    assert synced(tenant, "db")["sync"] == [
        {"cluster": "web", "namespace": "apps", "secretName": "db"}
    ]
    receivers = {receiver["name"]: receiver for receiver in alerting["receivers"]}
    assert [
        (config["channel"], config["api_url"])
        for name in ("oncall", "alerts")
        for config in receivers[name]["slack_configs"]
    ] == [("#oncall", SLACK_WEBHOOK), ("#alerts", SLACK_WEBHOOK)]
    assert [(route["receiver"], route["matchers"]) for route in alerting["route"]["routes"]] == [
        ("oncall", ['severity="critical"']),
        ("alerts", ['severity="warning"']),
    ]
    assert tofu.plan_exit_code() == 0

    tofu.ok("destroy", "-auto-approve", "-input=false")
    assert tenant.read("/clusters/web") is None
    assert tenant.read("/secrets/db") is None
    alerting = tenant.read("/alerting/config")
    assert alerting is not None
    assert {receiver["name"] for receiver in alerting["receivers"]} & {"oncall", "alerts"} == set()
    assert alerting["route"].get("routes", []) == []
