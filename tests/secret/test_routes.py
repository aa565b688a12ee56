"""The secrets API: validation, conflicts, PATCH replace semantics, If-Match, access levels."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tenantplane.cluster.models import ClusterPhase
from tenantplane.db.engine import Database
from tenantplane.http.errors import Conflict
from tenantplane.secret import service as secret_service
from tenantplane.secret.schemas import SecretCreate
from tenantplane.tenant import lifecycle
from tests.conftest import make_settings
from tests.factories import Factory, TenantFixture
from tests.http_client import api_client, bearer, running_app
from tests.secret.support import wait_for_phase
from tests.statements import notifies, statements_sent
from tests.wakeups import wake_ups


async def create(
    client: httpx.AsyncClient, tenant: TenantFixture, body: dict[str, Any]
) -> httpx.Response:
    return await client.post(f"{tenant.path}/secrets", json=body, headers=bearer(tenant.admin_key))


def assert_invalid(response: httpx.Response, field: str | None, code: str) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == code, body
    assert body.get("field") == field, body
    assert body["error"]


async def test_create_returns_the_secret_with_etag_and_defaults(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    cluster = await factory.cluster_row(tenant.id, "prod")
    response = await create(
        client,
        tenant,
        {
            "name": "db-creds",
            "secretPath": "apps/db/credentials",
            "sync": [
                {"cluster": cluster.name, "namespace": "default"},
                {"cluster": cluster.name, "namespace": "jobs", "secretName": "db.creds"},
            ],
        },
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert response.headers["ETag"] == f'"{body["resourceVersion"]}"'
    assert body["name"] == "db-creds"
    assert body["secretPath"] == "apps/db/credentials"
    # secretName defaults to the managed secret's name.
    assert body["sync"] == [
        {"cluster": "prod", "namespace": "default", "secretName": "db-creds"},
        {"cluster": "prod", "namespace": "jobs", "secretName": "db.creds"},
    ]
    assert datetime.fromisoformat(body["createdAt"]).tzinfo is not None
    assert body["createdAt"].endswith("Z")
    assert isinstance(body["resourceVersion"], str)
    status = body["status"]
    assert status["phase"] == "Pending"
    assert [(s["cluster"], s["namespace"], s["phase"]) for s in status["syncStatuses"]] == [
        ("prod", "default", "Pending"),
        ("prod", "jobs", "Pending"),
    ]
    assert {c["type"] for c in status["conditions"]} == {"Ready", "SecretPathResolved"}

    fetched = await client.get(f"{tenant.path}/secrets/db-creds", headers=bearer(tenant.admin_key))
    assert fetched.status_code == 200
    assert fetched.headers["ETag"] == f'"{fetched.json()["resourceVersion"]}"'
    assert fetched.json()["sync"] == body["sync"]

    listed = await client.get(f"{tenant.path}/secrets", headers=bearer(tenant.readonly_key))
    assert listed.status_code == 200
    assert [item["name"] for item in listed.json()["items"]] == ["db-creds"]


async def test_sync_is_optional_and_secrets_never_carry_values(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    response = await create(client, tenant, {"name": "api-token", "secretPath": "api/token"})
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["sync"] == []
    assert set(body) == {"name", "secretPath", "sync", "createdAt", "resourceVersion", "status"}
    assert set(body["status"]) == {"phase", "conditions", "syncStatuses"}


async def test_duplicate_name_is_409(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    assert (await create(client, tenant, {"name": "dup", "secretPath": "a"})).status_code == 201
    again = await create(client, tenant, {"name": "dup", "secretPath": "b"})
    assert again.status_code == 409
    assert again.json()["code"] == "ALREADY_EXISTS"
    # Another tenant may use the name.
    other = await factory.tenant()
    assert (await create(client, other, {"name": "dup", "secretPath": "a"})).status_code == 201


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "x", "secretPath": "a"}, "name"),
        ({"name": "Upper", "secretPath": "a"}, "name"),
        ({"name": "-bad", "secretPath": "a"}, "name"),
        ({"name": "a" * 64, "secretPath": "a"}, "name"),
        ({"secretPath": "a"}, "name"),
        ({"name": "ok-name"}, "secretPath"),
        ({"name": "ok-name", "secretPath": ""}, "secretPath"),
        ({"name": "ok-name", "secretPath": "/abs/path"}, "secretPath"),
        ({"name": "ok-name", "secretPath": "folder/"}, "secretPath"),
        ({"name": "ok-name", "secretPath": "a//b"}, "secretPath"),
        ({"name": "ok-name", "secretPath": "a/../b"}, "secretPath"),
        ({"name": "ok-name", "secretPath": ".."}, "secretPath"),
        ({"name": "ok-name", "secretPath": "a/./b"}, "secretPath"),
        ({"name": "ok-name", "secretPath": "has space"}, "secretPath"),
        ({"name": "ok-name", "secretPath": "a?b"}, "secretPath"),
        ({"name": "ok-name", "secretPath": "x" * 256}, "secretPath"),
        ({"name": "ok-name", "secretPath": 5}, "secretPath"),
        ({"name": "ok-name", "secretPath": "a", "sync": "prod"}, "sync"),
        ({"name": "ok-name", "secretPath": "a", "sync": [{"namespace": "n"}]}, "sync[0].cluster"),
        (
            {"name": "ok-name", "secretPath": "a", "sync": [{"cluster": "prod"}]},
            "sync[0].namespace",
        ),
    ],
)
async def test_invalid_create_bodies_name_the_field(
    client: httpx.AsyncClient, factory: Factory, body: dict[str, Any], field: str
) -> None:
    tenant = await factory.tenant()
    assert_invalid(await create(client, tenant, body), field, "VALIDATION_FAILED")


@pytest.mark.parametrize(
    ("target", "field"),
    [
        ({"cluster": "Prod", "namespace": "default"}, "sync[1].cluster"),
        ({"cluster": "prod", "namespace": "Default"}, "sync[1].namespace"),
        ({"cluster": "prod", "namespace": "has.dot"}, "sync[1].namespace"),
        ({"cluster": "prod", "namespace": "n" * 64}, "sync[1].namespace"),
        ({"cluster": "prod", "namespace": "ns", "secretName": "Bad_Name"}, "sync[1].secretName"),
        ({"cluster": "prod", "namespace": "ns", "secretName": ".lead"}, "sync[1].secretName"),
        ({"cluster": "prod", "namespace": "ns", "secretName": "s" * 254}, "sync[1].secretName"),
        ({"cluster": "prod", "namespace": "ns", "secretName": ""}, "sync[1].secretName"),
    ],
)
async def test_invalid_sync_targets_name_the_field(
    client: httpx.AsyncClient, factory: Factory, target: dict[str, Any], field: str
) -> None:
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    body = {
        "name": "s1",
        "secretPath": "a",
        "sync": [{"cluster": "prod", "namespace": "a"}, target],
    }
    assert_invalid(await create(client, tenant, body), field, "VALIDATION_FAILED")


async def test_unknown_fields_are_refused(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    top = await create(client, tenant, {"name": "s1", "secretPath": "a", "value": "hunter2"})
    assert_invalid(top, "value", "UNKNOWN_FIELD")
    nested = await create(
        client,
        tenant,
        {"name": "s1", "secretPath": "a", "sync": [{"cluster": "prod", "namespace": "a", "x": 1}]},
    )
    assert_invalid(nested, "sync[0].x", "UNKNOWN_FIELD")


async def test_target_cluster_must_be_a_live_cluster_of_this_tenant(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    other = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    await factory.cluster_row(other.id, "theirs")
    await factory.cluster_row(tenant.id, "going", deleting=True)
    await factory.cluster_row(tenant.id, "booting", phase=ClusterPhase.provisioning)
    for missing in ("nope", "theirs", "going"):
        body = {
            "name": "s1",
            "secretPath": "a",
            "sync": [{"cluster": "prod", "namespace": "a"}, {"cluster": missing, "namespace": "a"}],
        }
        assert_invalid(await create(client, tenant, body), "sync[1].cluster", "UNKNOWN_CLUSTER")
    # A cluster that is not Running yet is a valid target (its status says ClusterNotReady).
    body = {"name": "s1", "secretPath": "a", "sync": [{"cluster": "booting", "namespace": "a"}]}
    assert (await create(client, tenant, body)).status_code == 201


async def test_duplicate_targets_are_refused(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    targets: list[dict[str, str]] = [
        {"cluster": "prod", "namespace": "a"},
        {"cluster": "prod", "namespace": "b"},
        # Same as sync[0] once secretName takes its default.
        {"cluster": "prod", "namespace": "a", "secretName": "app"},
    ]
    body = {"name": "app", "secretPath": "a", "sync": targets}
    assert_invalid(await create(client, tenant, body), "sync[2]", "DUPLICATE_SYNC_TARGET")
    # The same namespace with another secretName is a different target.
    targets[2]["secretName"] = "app-copy"
    assert (await create(client, tenant, body)).status_code == 201


async def test_patch_replaces_the_targets(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    await factory.cluster_row(tenant.id, "stage")
    created = await create(
        client,
        tenant,
        {"name": "app", "secretPath": "a", "sync": [{"cluster": "prod", "namespace": "a"}]},
    )
    path = f"{tenant.path}/secrets/app"
    patched = await client.patch(
        path,
        json={"sync": [{"cluster": "stage", "namespace": "b", "secretName": "renamed"}]},
        headers=bearer(tenant.admin_key),
    )
    assert patched.status_code == 200, patched.text
    body = patched.json()
    assert body["sync"] == [{"cluster": "stage", "namespace": "b", "secretName": "renamed"}]
    assert [s["cluster"] for s in body["status"]["syncStatuses"]] == ["stage"]
    assert body["secretPath"] == "a"
    assert body["createdAt"] == created.json()["createdAt"]
    assert int(body["resourceVersion"]) > int(created.json()["resourceVersion"])
    assert patched.headers["ETag"] == f'"{body["resourceVersion"]}"'

    emptied = await client.patch(path, json={"sync": []}, headers=bearer(tenant.admin_key))
    assert emptied.status_code == 200
    assert emptied.json()["sync"] == []
    assert emptied.json()["status"]["syncStatuses"] == []


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({}, "sync", "VALIDATION_FAILED"),
        ({"sync": None}, "sync", "VALIDATION_FAILED"),
        ({"sync": [], "secretPath": "other"}, "secretPath", "UNKNOWN_FIELD"),
        ({"sync": [], "name": "other"}, "name", "UNKNOWN_FIELD"),
        ({"sync": [{"cluster": "prod"}]}, "sync[0].namespace", "VALIDATION_FAILED"),
        ({"sync": [{"cluster": "nope", "namespace": "a"}]}, "sync[0].cluster", "UNKNOWN_CLUSTER"),
        (
            {
                "sync": [
                    {"cluster": "prod", "namespace": "a"},
                    {"cluster": "prod", "namespace": "a"},
                ]
            },
            "sync[1]",
            "DUPLICATE_SYNC_TARGET",
        ),
    ],
)
async def test_invalid_patch_bodies(
    client: httpx.AsyncClient, factory: Factory, body: dict[str, Any], field: str, code: str
) -> None:
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    await create(client, tenant, {"name": "app", "secretPath": "a"})
    response = await client.patch(
        f"{tenant.path}/secrets/app", json=body, headers=bearer(tenant.admin_key)
    )
    assert_invalid(response, field, code)


async def test_patch_with_if_match(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    await create(client, tenant, {"name": "app", "secretPath": "a"})
    path = f"{tenant.path}/secrets/app"
    # Let the reconciler settle, so that the ETag read below stays current.
    await wait_for_phase(client, path, tenant.admin_key, "Synced")
    etag = (await client.get(path, headers=bearer(tenant.admin_key))).headers["ETag"]
    first = await client.patch(
        path,
        json={"sync": [{"cluster": "prod", "namespace": "a"}]},
        headers={**bearer(tenant.admin_key), "If-Match": etag},
    )
    assert first.status_code == 200, first.text
    stale = await client.patch(
        path, json={"sync": []}, headers={**bearer(tenant.admin_key), "If-Match": etag}
    )
    assert stale.status_code == 412
    assert stale.json()["code"] == "PRECONDITION_FAILED"
    # The stale write changed nothing.
    current = (await client.get(path, headers=bearer(tenant.admin_key))).json()
    assert current["sync"] == [{"cluster": "prod", "namespace": "a", "secretName": "app"}]
    wildcard = await client.patch(
        path, json={"sync": []}, headers={**bearer(tenant.admin_key), "If-Match": "*"}
    )
    assert wildcard.status_code == 200


async def test_missing_and_invalid_names(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    assert (await client.get(f"{tenant.path}/secrets/absent", headers=headers)).status_code == 404
    patched = await client.patch(
        f"{tenant.path}/secrets/absent", json={"sync": []}, headers=headers
    )
    assert patched.status_code == 404
    deleted = await client.delete(f"{tenant.path}/secrets/absent", headers=headers)
    assert deleted.status_code == 404
    invalid = await client.get(f"{tenant.path}/secrets/Not_Valid", headers=headers)
    assert_invalid(invalid, "name", "INVALID_NAME")


async def test_members_read_and_admins_write(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    outsider = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    assert (await create(client, tenant, {"name": "app", "secretPath": "a"})).status_code == 201
    secrets = f"{tenant.path}/secrets"
    readonly = bearer(tenant.readonly_key)

    assert (await client.get(secrets, headers=readonly)).status_code == 200
    assert (await client.get(f"{secrets}/app", headers=readonly)).status_code == 200
    body = {"name": "other", "secretPath": "a"}
    assert (await client.post(secrets, json=body, headers=readonly)).status_code == 403
    patch = {"sync": [{"cluster": "prod", "namespace": "a"}]}
    assert (await client.patch(f"{secrets}/app", json=patch, headers=readonly)).status_code == 403
    assert (await client.delete(f"{secrets}/app", headers=readonly)).status_code == 403

    foreign = bearer(outsider.admin_key)
    assert (await client.get(secrets, headers=foreign)).status_code == 403
    assert (await client.get(f"{secrets}/app", headers=foreign)).status_code == 403
    assert (await client.delete(f"{secrets}/app", headers=foreign)).status_code == 403
    assert (await client.get(secrets)).status_code == 401
    # Nothing changed.
    listed = await client.get(secrets, headers=readonly)
    assert [item["name"] for item in listed.json()["items"]] == ["app"]
    assert listed.json()["items"][0]["sync"] == []


async def test_delete_hides_the_secret_and_frees_its_name(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await create(client, tenant, {"name": "app", "secretPath": "a"})
    headers = bearer(tenant.admin_key)
    stale = await client.delete(
        f"{tenant.path}/secrets/app", headers={**headers, "If-Match": '"999"'}
    )
    assert stale.status_code == 412
    deleted = await client.delete(f"{tenant.path}/secrets/app", headers=headers)
    assert deleted.status_code == 204
    assert deleted.content == b""
    assert (await client.get(f"{tenant.path}/secrets/app", headers=headers)).status_code == 404
    listed = await client.get(f"{tenant.path}/secrets", headers=headers)
    assert listed.json()["items"] == []
    assert (await client.delete(f"{tenant.path}/secrets/app", headers=headers)).status_code == 404
    again = await create(client, tenant, {"name": "app", "secretPath": "b"})
    assert again.status_code == 201
    assert again.json()["secretPath"] == "b"


async def test_patch_with_the_same_targets_changes_nothing(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    sync = [{"cluster": "prod", "namespace": "a"}]
    await create(client, tenant, {"name": "app", "secretPath": "a", "sync": sync})
    path = f"{tenant.path}/secrets/app"
    settled = await wait_for_phase(client, path, tenant.admin_key, "Synced")
    # The defaulted secretName spelled out is the same target.
    same = [{"cluster": "prod", "namespace": "a", "secretName": "app"}]
    patched = await client.patch(path, json={"sync": same}, headers=bearer(tenant.admin_key))
    assert patched.status_code == 200
    assert patched.json()["resourceVersion"] == settled["resourceVersion"]
    assert patched.json()["status"]["phase"] == "Synced"


async def test_create_inserts_the_row_once_without_a_savepoint(
    database: Database, factory: Factory
) -> None:
    """The duplicate check is the unique constraint at the INSERT: a savepoint around it would
    cost two round trips and, opened after the INSERT (begin_nested flushes first), protect
    nothing."""
    tenant = await factory.tenant()
    with statements_sent(database.engine) as statements:
        async with database.transaction() as session:
            await secret_service.create(
                session,
                tenant.id,
                SecretCreate.model_validate({"name": "db-creds", "secretPath": "apps/db"}),
            )
    assert [s for s in statements if s.startswith("INSERT INTO SECRETS")], statements
    assert not [s for s in statements if "SAVEPOINT" in s], statements


async def test_racing_creates_of_one_name_end_in_a_conflict(
    database: Database, factory: Factory
) -> None:
    """The second create finds no committed row (PostgreSQL) and loses at its INSERT, or
    waits for the write lock and then finds it (SQLite); a create after the commit finds the
    row committed. A Conflict either way."""
    tenant = await factory.tenant()
    body = SecretCreate.model_validate({"name": "db-creds", "secretPath": "apps/db"})
    async with database.sessionmaker() as first, database.sessionmaker() as second:
        await first.begin()
        await second.begin()
        await secret_service.create(first, tenant.id, body)
        racing = asyncio.create_task(secret_service.create(second, tenant.id, body))
        await asyncio.sleep(0.05)
        await first.commit()
        with pytest.raises(Conflict):
            await racing
        await second.rollback()
    async with database.sessionmaker() as later:
        with pytest.raises(Conflict):
            await secret_service.create(later, tenant.id, body)


async def test_a_suspended_tenants_create_is_refused_before_its_body_is_validated(
    client: httpx.AsyncClient, database: Database, factory: Factory
) -> None:
    """A secret's create checks the tenant's state in its access check, as every other write
    does: a suspended tenant's create is refused for the state, with or without targets and
    whatever its body (the order of checks: the state before the body, docs/access.md), as
    a cluster's create is, and nothing is inserted."""
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    async with database.transaction() as session:
        await lifecycle.suspend(session, tenant.name)
    targets = [{"cluster": "prod", "namespace": "a"}]
    bodies: list[tuple[str, Any]] = [
        ("secrets", {"name": "db-creds", "secretPath": "apps/db"}),
        ("secrets", {"name": "db-creds", "secretPath": "apps/db", "sync": targets}),
        ("secrets", {"name": "Not A Name", "secretPath": ""}),
        ("secrets", ["not", "a", "body"]),
        ("clusters", {"name": "Not A Name"}),
    ]
    for feature, body in bodies:
        response = await client.post(
            f"{tenant.path}/{feature}", json=body, headers=bearer(tenant.admin_key)
        )
        assert response.status_code == 403, (feature, body, response.text)
        assert response.json()["code"] == "TENANT_SUSPENDED", (feature, body, response.text)
    async with database.sessionmaker() as session:
        assert (await secret_service.list_secrets(session, tenant.id))[0] == []


async def test_a_taken_name_is_409_before_its_targets_are_checked(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    assert (await create(client, tenant, {"name": "dup", "secretPath": "a"})).status_code == 201
    again = await create(
        client,
        tenant,
        {"name": "dup", "secretPath": "b", "sync": [{"cluster": "nowhere", "namespace": "n"}]},
    )
    assert again.status_code == 409, again.text
    assert again.json() == {
        "error": "a secret named 'dup' already exists",
        "message": "a secret named 'dup' already exists",
        "code": "ALREADY_EXISTS",
        "field": "name",
        "severity": "error",
    }


async def test_a_create_is_one_insert_that_carries_its_wake_up(
    database: Database, database_url: str, factory: Factory, tmp_path: Path
) -> None:
    """A create without targets looks for nothing before its INSERT (the unique index
    answers a taken name, with the same envelope as the look a create with targets makes),
    and on PostgreSQL the NOTIFY that wakes other processes' reconcilers rides in it,
    delivered when the request's transaction commits."""
    tenant = await factory.tenant()
    postgresql = database.engine.dialect.name == "postgresql"
    # Reconcilers off: the statements seen are the requests' alone.
    settings = make_settings(database_url, tmp_path, run_reconcilers=False)
    async with (
        wake_ups(database_url, "secrets") as woken,
        running_app(settings) as app,
        api_client(app) as client,
    ):
        with statements_sent(app.state.database) as statements:
            response = await create(client, tenant, {"name": "db-creds", "secretPath": "apps/db"})
            taken = await create(client, tenant, {"name": "db-creds", "secretPath": "apps/x"})
        cluster = await factory.cluster_row(tenant.id, "prod")
        targets = [{"cluster": cluster.name, "namespace": "n"}]
        looked = await create(
            client, tenant, {"name": "db-creds", "secretPath": "apps/db", "sync": targets}
        )
        assert response.status_code == 201, response.text
        assert woken.local.is_set()
        assert taken.status_code == 409, taken.text
        # The same answer as the look before the INSERT gives (a create with targets).
        assert looked.status_code == 409, looked.text
        assert taken.json() == looked.json()
        assert not [s for s in statements if s.startswith("SELECT") and "FROM SECRETS" in s]
        inserts = [s for s in statements if s.startswith("INSERT INTO SECRETS")]
        assert len(inserts) == 2, statements
        assert notifies(inserts) == (inserts if postgresql else []), inserts
        await woken.delivered()


async def test_a_create_in_the_requests_transaction_reads_the_state_once(
    database: Database, database_url: str, factory: Factory, tmp_path: Path
) -> None:
    """A create runs in the request's transaction, with or without an Idempotency-Key or
    targets: the tenant's state is read there once, under its lock, by the access check
    (before the key is claimed and the targets are looked up)."""
    tenant = await factory.tenant()
    cluster = await factory.cluster_row(tenant.id, "prod")
    targets = [{"cluster": cluster.name, "namespace": "n"}]
    postgresql = database.engine.dialect.name == "postgresql"
    state_read = "TENANT_STATE_FOR_WRITE(" if postgresql else "SELECT TENANTS.STATE FROM TENANTS"
    settings = make_settings(database_url, tmp_path, run_reconcilers=False)
    bodies = {
        "plain": ({"name": "plain", "secretPath": "apps/p"}, {}),
        "keyed": ({"name": "keyed", "secretPath": "apps/k"}, {"Idempotency-Key": '"once-1"'}),
        "targets": (
            {"name": "targets", "secretPath": "apps/t", "sync": targets},
            {},
        ),
        "both": (
            {"name": "both", "secretPath": "apps/b", "sync": targets},
            {"Idempotency-Key": '"once-2"'},
        ),
    }
    async with running_app(settings) as app, api_client(app) as client:
        for name, (body, headers) in bodies.items():
            with statements_sent(app.state.database) as statements:
                response = await client.post(
                    f"{tenant.path}/secrets",
                    json=body,
                    headers={**bearer(tenant.admin_key), **headers},
                )
            assert response.status_code == 201, (name, response.text)
            reads = [s for s in statements if state_read in s]
            assert len(reads) == 1, (name, statements)


async def test_a_taken_name_under_an_idempotency_key_is_kept_and_replayed(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """The 409 comes from the failed INSERT (on PostgreSQL the request's transaction is
    aborted by it): the key still records it, and a repeat gets the same answer."""
    tenant = await factory.tenant()
    url = f"{tenant.path}/secrets"

    async def create(key: str) -> httpx.Response:
        return await client.post(
            url,
            json={"name": "db-creds", "secretPath": "apps/db"},
            headers={**bearer(tenant.admin_key), "Idempotency-Key": f'"{key}"'},
        )

    first = await create("one")
    assert first.status_code == 201, first.text
    again = await create("one")
    assert again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.headers["ETag"] == first.headers["ETag"]
    assert again.json() == first.json()
    taken = await create("two")
    assert taken.status_code == 409, taken.text
    repeated = await create("two")
    assert repeated.status_code == 409
    assert repeated.headers["Idempotent-Replayed"] == "true"
    assert repeated.json() == taken.json()
    listed = await client.get(url, headers=bearer(tenant.admin_key))
    assert [secret["name"] for secret in listed.json()["items"]] == ["db-creds"]
