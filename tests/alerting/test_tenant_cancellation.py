"""A cancelled tenant's alerting configuration is withdrawn from the backend after the real
`tenantplane tenant cancel` commits: deleted from Mimir, rendered out of the shared
Alertmanager (and kept out when other tenants write); an unreachable backend does not hold
the cancellation up, and the withdrawal is retried until it answers."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import yaml
from typer.testing import CliRunner, Result

from tenantplane.cli import app as cli
from tenantplane.db.engine import Database
from tests.alerting.applied import applied
from tests.alerting.conftest import SharedAlertmanager
from tests.conftest import TEST_SECRET
from tests.factories import Factory, TenantFixture
from tests.fakes.mimir import FakeMimir
from tests.http_client import bearer

HOOK = {"webhook_configs": [{"url": "https://hooks.example.com/ops"}]}


async def cancel(database_url: str, backend: dict[str, str], tenant: str) -> Result:
    env = {
        "TENANTPLANE_DATABASE_URL": database_url,
        "TENANTPLANE_SECRET_KEY": TEST_SECRET,
        **backend,
    }
    # The CLI runs its own event loop, as it does from a shell.
    return await asyncio.to_thread(CliRunner().invoke, cli, ["tenant", "cancel", tenant], env=env)


async def add_receiver(
    client: httpx.AsyncClient, database: Database, tenant: TenantFixture
) -> None:
    response = await client.put(
        f"{tenant.path}/alerting/receivers/ops", json=HOOK, headers=bearer(tenant.admin_key)
    )
    assert response.status_code == 201, response.text
    await applied(database, tenant.name)


async def state_of(client: httpx.AsyncClient, tenant: TenantFixture) -> str:
    state: str = (await client.get(tenant.path, headers=bearer(tenant.admin_key))).json()["state"]
    return state


async def test_mimir_forgets_a_cancelled_tenant(
    mimir_client: httpx.AsyncClient,
    factory: Factory,
    fake_mimir: FakeMimir,
    database_url: str,
    database: Database,
) -> None:
    tenant, other = await factory.tenant(), await factory.tenant()
    for each, org in ((tenant, "org-a"), (other, "org-b")):
        await factory.alerting_credentials(each.name, org_id=org)
        fake_mimir.expect_basic(org, "mimir-user", "mimir-password")
        await add_receiver(mimir_client, database, each)
    assert set(fake_mimir.configs) == {"org-a", "org-b"}

    backend = {"TENANTPLANE_ALERTING_BACKEND": "mimir", "TENANTPLANE_MIMIR_URL": fake_mimir.url}
    result = await cancel(database_url, backend, tenant.name)
    assert result.exit_code == 0, result.output
    await applied(database, tenant.name)
    assert set(fake_mimir.configs) == {"org-b"}
    [deleted] = [request for request in fake_mimir.requests if request.method == "DELETE"]
    assert deleted.headers["X-Scope-OrgID"] == "org-a"
    # What the tenant had stays readable (an export), and cannot be changed.
    config = await mimir_client.get(
        f"{tenant.path}/alerting/config", headers=bearer(tenant.readonly_key)
    )
    assert [receiver["name"] for receiver in config.json()["receivers"]] == ["default", "ops"]


async def test_an_unreachable_backend_does_not_hold_up_the_cancellation(
    mimir_client: httpx.AsyncClient,
    factory: Factory,
    fake_mimir: FakeMimir,
    database_url: str,
    database: Database,
) -> None:
    tenant = await factory.tenant()
    await factory.alerting_credentials(tenant.name, org_id="org-a")
    fake_mimir.expect_basic("org-a", "mimir-user", "mimir-password")
    await add_receiver(mimir_client, database, tenant)

    closed = "http://127.0.0.1:9"  # discard port: nothing listens
    backend = {"TENANTPLANE_ALERTING_BACKEND": "mimir", "TENANTPLANE_MIMIR_URL": closed}
    result = await cancel(database_url, backend, tenant.name)
    assert result.exit_code == 0, result.output
    assert await state_of(mimir_client, tenant) == "cancelled"
    # The withdrawal stays due; the API's reconcilers (which reach Mimir) finish it.
    await applied(database, tenant.name)
    assert "org-a" not in fake_mimir.configs


def tenants_in(config_file: Path) -> set[str]:
    config: dict[str, Any] = yaml.safe_load(config_file.read_text())
    return {
        receiver["name"].split("/")[0]
        for receiver in config["receivers"]
        if "/" in receiver["name"]
    }


async def test_the_shared_alertmanager_is_rendered_without_a_cancelled_tenant(
    database: Database,
    shared_client: httpx.AsyncClient,
    shared_alertmanager: SharedAlertmanager,
    factory: Factory,
    database_url: str,
    unique: str,
) -> None:
    tenant, other = await factory.tenant(f"a-{unique}"), await factory.tenant(f"b-{unique}")
    await add_receiver(shared_client, database, tenant)
    await add_receiver(shared_client, database, other)
    assert {tenant.name, other.name} <= tenants_in(shared_alertmanager.config_file)

    backend = {
        "TENANTPLANE_ALERTING_BACKEND": "alertmanager",
        "TENANTPLANE_ALERTMANAGER_URL": shared_alertmanager.url,
        "TENANTPLANE_ALERTMANAGER_CONFIG_FILE": str(shared_alertmanager.config_file),
    }
    result = await cancel(database_url, backend, tenant.name)
    assert result.exit_code == 0, result.output
    await applied(database, tenant.name)
    rendered = tenants_in(shared_alertmanager.config_file)
    assert tenant.name not in rendered
    assert other.name in rendered

    # Another tenant's write renders every live tenant again: the cancelled one stays out.
    changed = await shared_client.put(
        f"{other.path}/alerting/receivers/more", json=HOOK, headers=bearer(other.admin_key)
    )
    assert changed.status_code == 201, changed.text
    await applied(database, other.name)
    rendered = tenants_in(shared_alertmanager.config_file)
    assert tenant.name not in rendered
    assert other.name in rendered
