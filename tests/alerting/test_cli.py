"""`tenantplane alerting …`: operators set tenant credentials the Mimir backend then uses."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import httpx
from typer.testing import CliRunner

from tenantplane.alerting.repository import AlertingRepository
from tenantplane.cli import app
from tenantplane.db.engine import Database
from tenantplane.providers.alerting.alertmanager import TEMPLATE_DIR
from tenantplane.providers.alerting.render import dump_yaml, shared_config
from tests.alerting.applied import applied
from tests.alerting.conftest import SharedAlertmanager
from tests.conftest import TEST_SECRET
from tests.factories import Factory
from tests.fakes.mimir import FakeMimir
from tests.http_client import bearer
from tests.timestamps import RFC3339_UTC


async def tenantplane(
    *args: str,
    database_url: str,
    cwd: Path,
    stdin: str = "",
    extra_env: dict[str, str] | None = None,
) -> tuple[int, str, str]:
    """Run the `tenantplane` command (in a thread: the CLI runs its own event loop)."""
    env = {
        "TENANTPLANE_DATABASE_URL": database_url,
        "TENANTPLANE_SECRET_KEY": TEST_SECRET,
        **(extra_env or {}),
    }

    def invoke() -> tuple[int, str, str]:
        previous = Path.cwd()
        os.chdir(cwd)  # no .env from the checkout
        try:
            result = CliRunner().invoke(app, list(args), input=stdin, env=env)
        finally:
            os.chdir(previous)
        return result.exit_code, result.stdout, result.stderr

    return await asyncio.to_thread(invoke)


async def test_credentials_set_by_the_operator_reach_mimir(
    database: Database,
    mimir_client: httpx.AsyncClient,
    factory: Factory,
    fake_mimir: FakeMimir,
    database_url: str,
    tmp_path: Path,
) -> None:
    tenant = await factory.tenant()
    fake_mimir.expect_basic("org-9", "am-user", "s3cret")
    code, out, err = await tenantplane(
        "alerting",
        "set-credentials",
        tenant.name,
        "--org-id",
        "org-9",
        "--auth",
        "basic",
        "--username",
        "am-user",
        "--secret-stdin",
        database_url=database_url,
        cwd=tmp_path,
        stdin="s3cret\n",
    )
    assert code == 0, err
    code, out, err = await tenantplane(
        "alerting",
        "show-credentials",
        tenant.name,
        "--json",
        database_url=database_url,
        cwd=tmp_path,
    )
    shown = json.loads(out)
    assert shown["orgId"] == "org-9"
    assert shown["username"] == "am-user"
    assert "s3cret" not in out

    response = await mimir_client.put(
        f"{tenant.path}/alerting/receivers/ops",
        json={"webhook_configs": [{"url": "https://hooks.example.com/"}]},
        headers=bearer(tenant.admin_key),
    )
    assert response.status_code == 201, response.text
    await applied(database, tenant.name)
    assert "org-9" in fake_mimir.configs

    # The backend lost the configuration: `alerting sync` puts it back.
    fake_mimir.configs.clear()
    code, out, err = await tenantplane(
        "alerting",
        "sync",
        database_url=database_url,
        cwd=tmp_path,
        extra_env={
            "TENANTPLANE_ALERTING_BACKEND": "mimir",
            "TENANTPLANE_MIMIR_URL": fake_mimir.url,
        },
    )
    assert code == 0, err
    assert "org-9" in fake_mimir.configs

    code, out, err = await tenantplane(
        "alerting", "clear-credentials", tenant.name, database_url=database_url, cwd=tmp_path
    )
    assert code == 0, err
    pending = await mimir_client.get(
        f"{tenant.path}/alerting/config", headers=bearer(tenant.admin_key)
    )
    assert pending.status_code == 503
    assert pending.json()["code"] == "TENANT_CREDENTIALS_PENDING"


async def test_set_credentials_refuses_missing_secrets_and_unknown_tenants(
    factory: Factory, database: object, database_url: str, tmp_path: Path
) -> None:
    tenant = await factory.tenant()
    code, _, err = await tenantplane(
        "alerting",
        "set-credentials",
        tenant.name,
        "--auth",
        "bearer",
        "--secret-stdin",
        database_url=database_url,
        cwd=tmp_path,
        stdin="\n",
    )
    # A missing value is a usage error (exit 2); an unknown tenant is refused (exit 1).
    assert code == 2
    assert "token" in err
    code, _, err = await tenantplane(
        "alerting",
        "set-credentials",
        "no-such-tenant",
        "--auth",
        "none",
        database_url=database_url,
        cwd=tmp_path,
    )
    assert code == 1
    assert "not found" in err


async def test_sync_rewrites_the_shared_alertmanager_file(
    database: Database,
    shared_client: httpx.AsyncClient,
    shared_alertmanager: SharedAlertmanager,
    factory: Factory,
    database_url: str,
    tmp_path: Path,
) -> None:
    tenant = await factory.tenant()
    response = await shared_client.put(
        f"{tenant.path}/alerting/receivers/ops",
        json={"webhook_configs": [{"url": "https://hooks.example.com/"}]},
        headers=bearer(tenant.admin_key),
    )
    assert response.status_code == 201, response.text
    await applied(database, tenant.name)
    written = shared_alertmanager.config_file.read_text()
    shared_alertmanager.config_file.write_text(dump_yaml(shared_config({}, TEMPLATE_DIR)))

    code, _, err = await tenantplane(
        "alerting",
        "sync",
        database_url=database_url,
        cwd=tmp_path,
        extra_env={
            "TENANTPLANE_ALERTING_BACKEND": "alertmanager",
            "TENANTPLANE_ALERTMANAGER_URL": shared_alertmanager.url,
            "TENANTPLANE_ALERTMANAGER_CONFIG_FILE": str(shared_alertmanager.config_file),
        },
    )
    assert code == 0, err
    assert shared_alertmanager.config_file.read_text() == written


async def test_alerting_commands_answer_json_results_and_errors(
    client: httpx.AsyncClient, factory: Factory, database_url: str, tmp_path: Path
) -> None:
    tenant = await factory.tenant()
    response = await client.put(
        f"{tenant.path}/alerting/receivers/ops",
        json={"webhook_configs": [{"url": "https://hooks.example.com/"}]},
        headers=bearer(tenant.admin_key),
    )
    assert response.status_code == 201, response.text

    async def run(*args: str, stdin: str = "", **env: str) -> tuple[int, Any]:
        code, out, _ = await tenantplane(
            *args, "--json", database_url=database_url, cwd=tmp_path, stdin=stdin, extra_env=env
        )
        return code, json.loads(out)

    code, stored = await run(
        "alerting", "set-credentials", tenant.name, "--username", "u", stdin="pw\n"
    )
    assert code == 0
    assert stored["tenant"] == tenant.name
    assert stored["orgId"] == tenant.name
    assert stored["auth"] == "basic"
    assert RFC3339_UTC.fullmatch(stored["updatedAt"]), stored["updatedAt"]
    assert await run("alerting", "show-credentials", tenant.name) == (0, stored)
    assert await run("alerting", "sync") == (0, {"backend": "database", "applied": [tenant.name]})

    # A backend that cannot be reached: unavailable (3), as an unreachable database.
    code, error = await run(
        "alerting",
        "sync",
        TENANTPLANE_ALERTING_BACKEND="mimir",
        TENANTPLANE_MIMIR_URL="http://127.0.0.1:1",
    )
    assert code == 3
    assert error["error"]["code"] == "ALERTING_BACKEND_UNAVAILABLE"
    # A backend named without its address: a bad setting (2), named.
    code, error = await run("alerting", "sync", TENANTPLANE_ALERTING_BACKEND="mimir")
    assert code == 2
    assert error["error"]["code"] == "INVALID_SETTING"
    assert "TENANTPLANE_MIMIR_URL" in error["error"]["message"]
    code, error = await run("alerting", "show-credentials", "no-such-tenant")
    assert code == 1
    assert error["error"]["code"] == "NOT_FOUND"

    assert await run("alerting", "clear-credentials", tenant.name) == (
        0,
        {"tenant": tenant.name, "removed": True},
    )
    assert await run("alerting", "show-credentials", tenant.name) == (0, None)
    assert await run("alerting", "clear-credentials", tenant.name) == (
        0,
        {"tenant": tenant.name, "removed": False},
    )


async def test_check_lists_stored_configurations_that_todays_rules_refuse(
    factory: Factory, database_url: str, tmp_path: Path
) -> None:
    """A configuration stored before the receivers firewall existed is reported."""
    good = await factory.tenant()
    old = await factory.tenant()
    stale = {
        "global": {},
        "receivers": [{"name": "default", "webhook_configs": [{"url": "http://127.0.0.1:9093/"}]}],
        "route": {"receiver": "default"},
        "templates": {},
        "time_intervals": [],
    }
    async with factory.database.transaction() as session:
        repository = AlertingRepository.from_session(session)
        await repository.lock(good.id)
        await repository.lock(old.id, stale)

    code, out, _ = await tenantplane("alerting", "check", database_url=database_url, cwd=tmp_path)
    assert code == 1, out
    assert out.splitlines() == [
        f"{old.name}: receivers[0].webhook_configs[0].url: DESTINATION_BLOCKED: destination "
        "127.0.0.1 is a private, loopback, link-local or reserved address; receivers may not "
        "send there"
    ]
    code, out, _ = await tenantplane(
        "alerting", "check", "--json", database_url=database_url, cwd=tmp_path
    )
    assert code == 1, out
    [finding] = json.loads(out)["findings"]
    assert (finding["tenant"], finding["code"]) == (old.name, "DESTINATION_BLOCKED")
    allowed, out, _ = await tenantplane(
        "alerting",
        "check",
        database_url=database_url,
        cwd=tmp_path,
        extra_env={"TENANTPLANE_ALERTING_FIREWALL_BLOCK_PRIVATE": "false"},
    )
    assert (allowed, out.strip()) == (0, "every stored configuration passes the current rules")
