"""Vault path checks through hvac against the loopback KV v2 fake, and the guarantee that no
vault value ever reaches a response, a log line or the database."""

from __future__ import annotations

import json
import socket
import uuid
from pathlib import Path
from typing import Any

import httpx
import hvac
import hvac.exceptions
import pytest

from tenantplane.db.engine import Database
from tenantplane.reconcilers import build_supervisor
from tests.conftest import make_settings
from tests.db.leaks import needles_in_database
from tests.factories import Factory, TenantFixture
from tests.fakes.vault import FakeVault
from tests.http_client import api_client, bearer, running_app
from tests.secret.conftest import FAST
from tests.secret.support import (
    all_copies,
    condition,
    copies_in,
    target_statuses,
    wait_for_phase,
    wait_until,
)


def mount_of(tenant: TenantFixture) -> str:
    return f"tenant-{tenant.name}"


async def create(
    client: httpx.AsyncClient,
    tenant: TenantFixture,
    name: str,
    secret_path: str,
    sync: list[dict[str, str]],
) -> httpx.Response:
    response = await client.post(
        f"{tenant.path}/secrets",
        json={"name": name, "secretPath": secret_path, "sync": sync},
        headers=bearer(tenant.admin_key),
    )
    assert response.status_code == 201, response.text
    return response


# -- the fake speaks Vault's KV v2 API (checked with the real client) -------------------------


def test_fake_vault_answers_hvac_as_vault_does(vault: tuple[FakeVault, str]) -> None:
    fake, address = vault
    fake.enable_kv2("kv")
    client = hvac.Client(url=address, token=fake.token)
    kv = client.secrets.kv.v2
    kv.create_or_update_secret(path="apps/db", secret={"password": "pw-1"}, mount_point="kv")
    kv.create_or_update_secret(path="apps/db", secret={"password": "pw-2"}, mount_point="kv")
    kv.create_or_update_secret(path="apps/sub/api", secret={"token": "t"}, mount_point="kv")

    read = kv.read_secret_version(path="apps/db", mount_point="kv", raise_on_deleted_version=True)
    assert read["data"]["data"] == {"password": "pw-2"}
    assert read["data"]["metadata"]["version"] == 2

    metadata = kv.read_secret_metadata(path="apps/db", mount_point="kv")["data"]
    assert metadata["current_version"] == 2
    assert set(metadata["versions"]) == {"1", "2"}
    assert metadata["versions"]["2"]["deletion_time"] == ""
    assert "data" not in metadata
    assert "password" not in json.dumps(metadata)

    # LIST (hvac sends the LIST method) and GET ?list=true give the same keys.
    assert kv.list_secrets(path="apps", mount_point="kv")["data"]["keys"] == ["db", "sub/"]
    listed = httpx.get(
        f"{address}/v1/kv/metadata/apps?list=true", headers={"X-Vault-Token": fake.token}
    )
    assert listed.status_code == 200
    assert listed.json()["data"]["keys"] == ["db", "sub/"]
    with pytest.raises(hvac.exceptions.InvalidPath):
        kv.list_secrets(path="nothing-here", mount_point="kv")

    with pytest.raises(hvac.exceptions.InvalidPath):
        kv.read_secret_metadata(path="apps/missing", mount_point="kv")
    missing = httpx.get(
        f"{address}/v1/kv/metadata/apps/missing", headers={"X-Vault-Token": fake.token}
    )
    assert (missing.status_code, missing.json()) == (404, {"errors": []})

    wrong = hvac.Client(url=address, token="hvs.wrong")
    with pytest.raises(hvac.exceptions.Forbidden):
        wrong.secrets.kv.v2.read_secret_metadata(path="apps/db", mount_point="kv")
    denied = httpx.get(f"{address}/v1/kv/metadata/apps/db", headers={"X-Vault-Token": "nope"})
    assert (denied.status_code, denied.json()) == (403, {"errors": ["permission denied"]})
    assert httpx.get(f"{address}/v1/kv/metadata/apps/db").status_code == 403

    # A soft-deleted current version: data reads are 404, metadata shows the deletion.
    kv.delete_latest_version_of_secret(path="apps/db", mount_point="kv")
    with pytest.raises(hvac.exceptions.InvalidPath):
        kv.read_secret_version(path="apps/db", mount_point="kv", raise_on_deleted_version=True)
    metadata = kv.read_secret_metadata(path="apps/db", mount_point="kv")["data"]
    assert metadata["versions"]["2"]["deletion_time"] != ""

    assert "kv/" in client.sys.list_mounted_secrets_engines()["data"]
    with pytest.raises(hvac.exceptions.InvalidPath):
        kv.read_secret_metadata(path="x", mount_point="no-such-mount")


# -- path checks in the sync -------------------------------------------------------------


async def test_existing_paths_sync_and_missing_paths_fail(
    vault_client: httpx.AsyncClient,
    vault: tuple[FakeVault, str],
    factory: Factory,
    database: Database,
) -> None:
    fake, _ = vault
    tenant = await factory.tenant()
    prod = await factory.cluster_row(tenant.id, "prod")
    fake.enable_kv2(mount_of(tenant))
    fake.put(mount_of(tenant), "apps/db", {"password": "correct-horse"})
    target = [{"cluster": "prod", "namespace": "default"}]
    await create(vault_client, tenant, "db", "apps/db", target)
    await create(vault_client, tenant, "ghost", "apps/ghost", target)

    db = await wait_for_phase(vault_client, f"{tenant.path}/secrets/db", tenant.admin_key, "Synced")
    resolved = condition(db, "SecretPathResolved")
    assert resolved is not None
    assert (resolved["status"], resolved["reason"]) == ("True", "Found")

    ghost_path = f"{tenant.path}/secrets/ghost"
    ghost = await wait_for_phase(vault_client, ghost_path, tenant.admin_key, "Failed")
    assert target_statuses(ghost) == [("prod", "default", "ghost", "Failed", "SecretPathNotFound")]
    resolved = condition(ghost, "SecretPathResolved")
    assert resolved is not None
    assert (resolved["status"], resolved["reason"]) == ("False", "SecretPathNotFound")
    ready = condition(ghost, "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "SyncFailed")
    assert await copies_in(database, prod.uid) == {("default", "db")}

    # The path appears: the next check finds it and the copy is made.
    fake.put(mount_of(tenant), "apps/ghost", {"token": "boo"})
    await wait_for_phase(vault_client, ghost_path, tenant.admin_key, "Synced")
    assert await copies_in(database, prod.uid) == {("default", "db"), ("default", "ghost")}

    # Only metadata was ever asked for: values were never read.
    assert fake.requests
    assert {route.split("/")[1] for _, route in fake.requests} == {"metadata"}
    assert {method for method, _ in fake.requests} == {"GET"}


async def test_path_checks_share_one_connection_closed_when_the_reconcilers_stop(
    vault: tuple[FakeVault, str],
    factory: Factory,
    database: Database,
    database_url: str,
    tmp_path: Path,
) -> None:
    fake, address = vault
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    fake.enable_kv2(mount_of(tenant))
    fake.put(mount_of(tenant), "apps/db", {"password": "correct-horse"})
    settings = make_settings(
        database_url,
        tmp_path,
        vault_addr=address,
        vault_token=fake.token,
        run_reconcilers=False,
        **FAST,
    )
    # The reconcilers as `tenantplane worker` runs them, held here until the test ends.
    supervisor = build_supervisor(settings, database)
    supervisor.start()
    try:
        async with running_app(settings) as app, api_client(app) as client:
            # One secret: its checks run one after another (the resync repeats them).
            target = [{"cluster": "prod", "namespace": "a"}]
            await create(client, tenant, "db", "apps/db", target)

            async def checked_four_times() -> bool:
                return len(fake.requests) >= 4

            await wait_until(checked_four_times, "four path checks")
    finally:
        await supervisor.stop()
    assert fake.connections == 1

    async def all_closed() -> bool:
        return fake.open_connections == 0

    # Stopping the reconcilers closed the connection, though the reconcilers still exist.
    await wait_until(all_closed, "the connection to the vault to close")
    assert supervisor.runners


async def test_a_deleted_current_version_is_not_found(
    vault_client: httpx.AsyncClient, vault: tuple[FakeVault, str], factory: Factory
) -> None:
    fake, _ = vault
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    fake.enable_kv2(mount_of(tenant))
    fake.put(mount_of(tenant), "apps/db", {"password": "one"})
    fake.delete_current(mount_of(tenant), "apps/db")
    await create(vault_client, tenant, "db", "apps/db", [{"cluster": "prod", "namespace": "a"}])
    body = await wait_for_phase(
        vault_client, f"{tenant.path}/secrets/db", tenant.admin_key, "Failed"
    )
    assert target_statuses(body) == [("prod", "a", "db", "Failed", "SecretPathNotFound")]
    assert "deleted" in body["status"]["syncStatuses"][0]["message"]


async def test_a_wrong_vault_token_is_access_denied(
    database: Database,
    database_url: str,
    tmp_path: Path,
    vault: tuple[FakeVault, str],
    factory: Factory,
) -> None:
    fake, address = vault
    settings = make_settings(
        database_url, tmp_path, vault_addr=address, vault_token="hvs.not-the-token", **FAST
    )
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    fake.enable_kv2(mount_of(tenant))
    fake.put(mount_of(tenant), "apps/db", {"password": "one"})
    async with running_app(settings) as app, api_client(app) as client:
        await create(client, tenant, "db", "apps/db", [{"cluster": "prod", "namespace": "a"}])
        body = await wait_for_phase(client, f"{tenant.path}/secrets/db", tenant.admin_key, "Failed")
    assert target_statuses(body) == [("prod", "a", "db", "Failed", "VaultAccessDenied")]
    resolved = condition(body, "SecretPathResolved")
    assert resolved is not None
    assert (resolved["status"], resolved["reason"]) == ("False", "VaultAccessDenied")
    assert await all_copies(database) == []


async def test_an_unreachable_vault_keeps_targets_pending(
    database: Database, database_url: str, tmp_path: Path, factory: Factory
) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = make_settings(
        database_url,
        tmp_path,
        vault_addr=f"http://127.0.0.1:{port}",
        vault_token="hvs.any",
        vault_timeout_seconds=2,
        **FAST,
    )
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    async with running_app(settings) as app, api_client(app) as client:
        await create(client, tenant, "db", "apps/db", [{"cluster": "prod", "namespace": "a"}])
        body = await wait_for_phase(
            client, f"{tenant.path}/secrets/db", tenant.admin_key, "Pending"
        )
    assert target_statuses(body) == [("prod", "a", "db", "Pending", "VaultUnavailable")]
    resolved = condition(body, "SecretPathResolved")
    assert resolved is not None
    assert (resolved["status"], resolved["reason"]) == ("Unknown", "VaultUnavailable")


# -- no value ever leaves the vault -------------------------------------------------------


async def test_no_vault_value_reaches_a_response_a_log_line_or_the_database(
    vault_client: httpx.AsyncClient,
    vault: tuple[FakeVault, str],
    factory: Factory,
    database: Database,
    database_url: str,
    capfd: pytest.CaptureFixture[str],
) -> None:
    fake, _ = vault
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    await factory.cluster_row(tenant.id, "stage")
    mount = mount_of(tenant)
    fake.enable_kv2(mount)
    values = {
        "apps/db": {"password": f"pw-{uuid.uuid4().hex}", "user": f"user-{uuid.uuid4().hex}"},
        "apps/api": {"token": f"tok-{uuid.uuid4().hex}"},
    }
    for path, data in values.items():
        fake.put(mount, path, data)
        fake.put(mount, path, {key: f"{value}-v2" for key, value in data.items()})
    needles = fake.values()
    assert len(needles) == 6

    seen: list[str] = []

    async def call(method: str, url: str, **options: Any) -> httpx.Response:
        response = await vault_client.request(
            method, url, headers=bearer(tenant.admin_key), **options
        )
        seen.append(response.text)
        seen.extend(f"{name}: {value}" for name, value in response.headers.items())
        return response

    secrets = f"{tenant.path}/secrets"
    for name, path in (("db", "apps/db"), ("api", "apps/api"), ("ghost", "apps/ghost")):
        sync = [{"cluster": "prod", "namespace": "default"}]
        await call("POST", secrets, json={"name": name, "secretPath": path, "sync": sync})
    await wait_for_phase(vault_client, f"{secrets}/db", tenant.admin_key, "Synced")
    await wait_for_phase(vault_client, f"{secrets}/ghost", tenant.admin_key, "Failed")
    await call("GET", secrets)
    await call("GET", f"{secrets}/db")
    await call(
        "PATCH",
        f"{secrets}/db",
        json={"sync": [{"cluster": "stage", "namespace": "apps", "secretName": "db"}]},
    )
    await wait_for_phase(vault_client, f"{secrets}/db", tenant.admin_key, "Synced")
    await call("GET", f"{secrets}/db")
    await call("DELETE", f"{secrets}/api")
    await call("GET", secrets)
    assert await all_copies(database)  # copies exist, and they hold no value either

    logged = capfd.readouterr()
    assert "secret sync phase changed" in logged.err  # the log was captured
    for needle in needles:
        assert all(needle not in text for text in seen), "a vault value reached a response"
        assert needle not in logged.err, "a vault value was logged"
        assert needle not in logged.out, "a vault value was printed"
    assert needles_in_database(database_url, [n.encode() for n in needles]) == []
