"""Lists that page, end to end: 1,050 secrets, more than one page at any page size the
clients use, all seen by tenantplane_secrets (page_size 100, and its default 500) and by
tpctl with TPCTL_PAGE_SIZE=100."""

from __future__ import annotations

import json
import subprocess
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from tenantplane.db.engine import Database
from tenantplane.secret.models import Secret, SyncPhase
from tenantplane.secret.status import initial_conditions
from tenantplane.tenant.models import Tenant as TenantRow
from tests.clients.conftest import TPCTL, tpctl_environment
from tests.clients.conftest import Tenant as ClientsTenant
from tests.contract.server import Served, server_env
from tests.terraform.conftest import Tenant, Tofu

pytestmark = pytest.mark.terraform

COUNT = 1050


async def create_secrets(server: Served, tenant: Tenant, names: list[str]) -> None:
    """The secrets, in the server's database as its create would leave them once synced (no
    targets: nothing for the sync controller to do): 1,050 requests would take most of a
    minute on a small machine, and the create is not what is tested here."""
    env = server_env(Path(server.log).parent)
    database = Database.connect(env["TENANTPLANE_DATABASE_URL"])
    try:
        async with database.transaction() as session:
            tenant_id = await session.scalar(
                select(TenantRow.id).where(TenantRow.name == tenant.name)
            )
            assert tenant_id is not None
            now = datetime.now(UTC)
            session.add_all(
                Secret(
                    uid=uuid.uuid4().hex,
                    tenant_id=tenant_id,
                    name=name,
                    created_at=now,
                    secret_path=f"apps/{name}",
                    sync=[],
                    generation=1,
                    phase=SyncPhase.synced.value,
                    observed_generation=1,
                    sync_statuses=[],
                    conditions=initial_conditions(1, now),
                    applied=[],
                    resource_version=1,
                    reconcile_at=None,
                )
                for name in names
            )
    finally:
        await database.dispose()


@pytest.fixture
async def secret_names(server: Served, tenant: Tenant) -> list[str]:
    names = [f"s-{number:04d}" for number in range(COUNT)]
    await create_secrets(server, tenant, names)
    return names


def test_the_data_source_and_tpctl_see_every_page(
    tofu: Tofu, tenant: Tenant, secret_names: list[str], tmp_path: Path
) -> None:
    tofu.configure("""
data "tenantplane_secrets" "small_pages" {
  page_size = 100
}

data "tenantplane_secrets" "default_pages" {}

output "small_pages" {
  value = data.tenantplane_secrets.small_pages.secrets[*].name
}

output "default_pages" {
  value = data.tenantplane_secrets.default_pages.secrets[*].name
}

output "paths" {
  value = distinct(data.tenantplane_secrets.small_pages.secrets[*].secret_path)
}
""")
    tofu.ok("apply", "-auto-approve", "-input=false")
    outputs = tofu.outputs()
    # Every secret once, in the API's order (by name).
    assert outputs["small_pages"] == secret_names
    assert outputs["default_pages"] == secret_names
    assert len(outputs["paths"]) == COUNT

    home = tmp_path / "home"
    home.mkdir()
    listed = subprocess.run(
        [TPCTL, "secrets", "list", "-o", "json"],
        env={
            **tpctl_environment(ClientsTenant(tenant.url, tenant.name, tenant.key), home),
            "TPCTL_PAGE_SIZE": "100",
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    assert sorted(secret["name"] for secret in json.loads(listed.stdout)) == secret_names


def test_a_page_size_out_of_range_is_refused_before_any_request(tofu: Tofu) -> None:
    tofu.configure('data "tenantplane_secrets" "all" {\n  page_size = 1001\n}\n')
    planned = tofu.run("plan", "-input=false")
    assert planned.returncode == 1, planned.stdout
    assert "page_size must be between 1 and 1000" in planned.stderr
