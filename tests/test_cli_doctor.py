"""`tenantplane doctor`: rows written before a name rule was tightened are named, not changed."""

from __future__ import annotations

import asyncio
import json

import httpx
from sqlalchemy import select, update
from typer.testing import CliRunner

from tenantplane.cli import app as cli
from tenantplane.cluster.models import Cluster
from tenantplane.db.engine import Database
from tenantplane.secret.models import Secret
from tenantplane.tenant.models import Tenant
from tests.conftest import TEST_SECRET
from tests.factories import Factory
from tests.http_client import bearer


async def doctor(database_url: str, *args: str) -> tuple[int, str]:
    """The command as an operator runs it (its own event loop: in a thread of its own)."""
    env = {"TENANTPLANE_DATABASE_URL": database_url, "TENANTPLANE_SECRET_KEY": TEST_SECRET}
    result = await asyncio.to_thread(CliRunner().invoke, cli, ["doctor", *args], env=env)
    return result.exit_code, result.stdout


async def test_a_clean_database_has_nothing_to_report(
    database: Database, database_url: str, factory: Factory
) -> None:
    await factory.tenant()
    code, output = await doctor(database_url, "--json")
    assert (code, json.loads(output)) == (0, []), output


async def test_names_written_before_the_rules_are_reported(
    database: Database, database_url: str, factory: Factory, client: httpx.AsyncClient
) -> None:
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "dev\n")
    await factory.cluster_row(tenant.id, "c" * 48)
    created = await client.post(
        f"{tenant.path}/secrets",
        json={"name": "db", "secretPath": "apps/db"},
        headers=bearer(tenant.admin_key),
    )
    assert created.status_code == 201, created.text
    async with database.transaction() as session:
        await session.execute(
            update(Secret)
            .where(Secret.tenant_id == tenant.id)
            .values(
                secret_path="apps/db\n",
                sync=[{"cluster": "dev", "namespace": "app\r", "secretName": "db"}],
            )
        )
    other = await factory.tenant()
    async with database.transaction() as session:
        await session.execute(
            update(Tenant).where(Tenant.id == other.id).values(name=f"{other.name}\n")
        )
    before = await _names(database)

    code, output = await doctor(database_url, "--json")
    assert code == 1
    found = {(f["kind"], f["tenant"], f["name"], f["field"]) for f in json.loads(output)}
    assert found == {
        ("cluster", tenant.name, "dev\n", "name"),
        ("cluster", tenant.name, "c" * 48, "name"),
        ("secret", tenant.name, "db", "secretPath"),
        ("secret", tenant.name, "db", "sync[0].namespace"),
        ("tenant", f"{other.name}\n", f"{other.name}\n", "name"),
    }
    code, table = await doctor(database_url)
    assert code == 1
    assert "dev\\n" in table  # shown escaped, not as a line break
    assert await _names(database) == before  # nothing changed


async def _names(database: Database) -> list[object]:
    async with database.transaction() as session:
        clusters = (await session.execute(select(Cluster.name))).scalars().all()
        tenants = (await session.execute(select(Tenant.name))).scalars().all()
        secrets = (await session.execute(select(Secret.secret_path, Secret.sync))).all()
    return [sorted(clusters), sorted(tenants), [tuple(row) for row in secrets]]
