"""The secrets pages: list (live rows), create with target rows (blank rows ignored, the
API's errors at the row they name), detail with each target's sync status, replacing the
targets under If-Match (a stale form is refused 412), a typed delete; readonly viewers get no
controls and a forged write is refused."""

from __future__ import annotations

import html
import re

import httpx
from fastapi import FastAPI

from tenantplane.member.models import Role
from tests.console.session import console_session
from tests.factories import Factory
from tests.http_client import bearer
from tests.secret.support import wait_for_phase

ETAG_FIELD = re.compile(r'name="etag" value="([^"]*)"')
DIGEST_FIELD = re.compile(r'name="targets_digest" value="([0-9a-f]+)"')


def field_error(page: httpx.Response, field_id: str) -> str:
    found = re.search(rf'<p class="field-error" id="{re.escape(field_id)}">([^<]+)</p>', page.text)
    assert found is not None, page.text
    return html.unescape(found.group(1))


def target_rows(*rows: tuple[str, str, str]) -> list[tuple[str, str]]:
    """Form fields of target rows (cluster, namespace, secretName), blank rows included."""
    fields: list[tuple[str, str]] = []
    for index, (cluster, namespace, secret_name) in enumerate(rows):
        fields += [
            (f"sync[{index}].cluster", cluster),
            (f"sync[{index}].namespace", namespace),
            (f"sync[{index}].secretName", secret_name),
        ]
    return fields


BLANK = ("", "", "")


async def test_an_admin_creates_a_secret_and_sees_each_targets_sync_status(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        assert "No secrets yet" in (await console.get("secrets")).text
        form = await console.get("secrets/-/new")
        assert form.text.count("<fieldset") == 3
        assert '<option value="prod">' in form.text
        created = await console.post(
            "secrets",
            [
                ("name", "db-creds"),
                ("secretPath", "apps/db/credentials"),
                *target_rows(("prod", "default", ""), BLANK, ("prod", "jobs", "db.creds")),
            ],
        )
        assert created.status_code == 303, created.text
        assert created.headers["location"].startswith(console.url("secrets/db-creds"))

        path = f"{tenant.path}/secrets/db-creds"
        stored = (await client.get(path, headers=bearer(tenant.admin_key))).json()
        assert stored["secretPath"] == "apps/db/credentials"
        assert stored["sync"] == [
            {"cluster": "prod", "namespace": "default", "secretName": "db-creds"},
            {"cluster": "prod", "namespace": "jobs", "secretName": "db.creds"},
        ]
        rows = await console.get("secrets/-/rows")
        assert 'data-secret="db-creds"' in rows.text
        assert "<td>2</td>" in rows.text

        await wait_for_phase(client, path, tenant.admin_key, "Synced")
        detail = await console.get("secrets/db-creds")
        assert detail.status_code == 200
        assert 'data-target="prod/default/db-creds"' in detail.text
        assert 'data-target="prod/jobs/db.creds"' in detail.text
        assert detail.text.count('<span class="badge ok">Synced</span>') >= 3
        status = await console.get("secrets/db-creds/status")
        assert "data-settled" in status.text
        assert "<html" not in status.text


async def test_the_apis_refusals_are_shown_at_the_row_they_name(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        unknown = await console.post(
            "secrets",
            [
                ("name", "app"),
                ("secretPath", "apps/app"),
                *target_rows(BLANK, ("nope", "default", "")),
            ],
        )
        assert unknown.status_code == 400
        # The second row: the blank first one was not sent, so the API named sync[0].
        assert "no cluster named 'nope'" in field_error(unknown, "f-sync[1]-cluster-error")
        assert 'value="nope"' in unknown.text

        duplicate = await console.post(
            "secrets",
            [
                ("name", "app"),
                ("secretPath", "apps/app"),
                *target_rows(("prod", "a", ""), BLANK, ("prod", "a", "")),
            ],
        )
        assert duplicate.status_code == 400
        found = re.search(r'<p class="field-error" id="target-2-error">([^<]+)</p>', duplicate.text)
        assert found is not None
        assert found.group(1).startswith("target 3 duplicates target 1")

        bad_path = await console.post("secrets", {"name": "app", "secretPath": "/absolute"})
        assert bad_path.status_code == 400
        assert "leading" in field_error(bad_path, "f-secretPath-error")
        listed = (
            await client.get(f"{tenant.path}/secrets", headers=bearer(tenant.admin_key))
        ).json()
        assert listed["items"] == []


async def test_replacing_the_targets_takes_the_forms_etag_and_a_stale_form_is_refused(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    await factory.cluster_row(tenant.id, "stage")
    path = f"{tenant.path}/secrets/app"
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        created = await console.post(
            "secrets", [("name", "app"), ("secretPath", "a"), *target_rows(("prod", "a", ""))]
        )
        assert created.status_code == 303
        await wait_for_phase(client, path, tenant.admin_key, "Synced")
        detail = await console.get("secrets/app")
        found = ETAG_FIELD.search(detail.text)
        assert found is not None
        etag = html.unescape(found.group(1))
        assert etag
        read_with = DIGEST_FIELD.search(detail.text)
        assert read_with is not None

        # The first row cleared (removed), a new one added.
        edited = await console.post(
            "secrets/app/targets",
            [("etag", etag), *target_rows(BLANK, ("stage", "b", "renamed"))],
        )
        assert edited.status_code == 303, edited.text
        stored = (await client.get(path, headers=bearer(tenant.admin_key))).json()
        assert stored["sync"] == [{"cluster": "stage", "namespace": "b", "secretName": "renamed"}]

        # Settled, so that the form answered below holds the current ETag.
        await wait_for_phase(client, path, tenant.admin_key, "Synced")
        # The form as read before that change: its targets are no longer the current ones.
        stale = await console.post(
            "secrets/app/targets",
            [
                ("etag", etag),
                ("targets_digest", read_with.group(1)),
                *target_rows(("prod", "c", "")),
            ],
        )
        assert stale.status_code == 412
        assert "changed meanwhile" in stale.text
        assert 'value="stage"' in stale.text  # the form now holds the current targets
        unchanged = (await client.get(path, headers=bearer(tenant.admin_key))).json()
        assert unchanged["sync"] == stored["sync"]

        # Every row cleared: no targets left.
        current = ETAG_FIELD.search(stale.text)
        assert current is not None
        emptied = await console.post(
            "secrets/app/targets", [("etag", html.unescape(current.group(1))), *target_rows(BLANK)]
        )
        assert emptied.status_code == 303, emptied.text
        assert (await client.get(path, headers=bearer(tenant.admin_key))).json()["sync"] == []


async def test_a_form_read_before_a_new_sync_status_still_saves_its_targets(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    """The detail page shows the sync status arriving live; the ETag moves with it, yet the
    targets the form was read with are still the current ones: the edit is saved."""
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    path = f"{tenant.path}/secrets/app"
    body = {"name": "app", "secretPath": "a", "sync": [{"cluster": "prod", "namespace": "a"}]}
    created = await client.post(
        f"{tenant.path}/secrets", json=body, headers=bearer(tenant.admin_key)
    )
    assert created.status_code == 201
    read_at = created.headers["etag"]
    await wait_for_phase(client, path, tenant.admin_key, "Synced")
    assert (await client.get(path, headers=bearer(tenant.admin_key))).headers["etag"] != read_at
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        read_with = DIGEST_FIELD.search((await console.get("secrets/app")).text)
        assert read_with is not None
        edited = await console.post(
            "secrets/app/targets",
            [("etag", read_at), ("targets_digest", read_with.group(1)), *target_rows(BLANK)],
        )
        assert edited.status_code == 303, edited.text
    assert (await client.get(path, headers=bearer(tenant.admin_key))).json()["sync"] == []


async def test_delete_needs_the_typed_name(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    path = f"{tenant.path}/secrets/app"
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        assert (
            await console.post("secrets", {"name": "app", "secretPath": "a"})
        ).status_code == 303
        detail = await console.get("secrets/app")
        assert 'data-confirm-for="delete-button" data-confirm-text="app"' in detail.text
        mistyped = await console.post("secrets/app/delete", {"confirm": "ap"})
        assert mistyped.status_code == 400
        assert "type app to confirm" in field_error(mistyped, "f-confirm-error")
        assert (await client.get(path, headers=bearer(tenant.admin_key))).status_code == 200
        deleted = await console.post("secrets/app/delete", {"confirm": "app"})
        assert deleted.status_code == 303
        assert deleted.headers["location"].startswith(console.url("secrets"))
        assert (await client.get(path, headers=bearer(tenant.admin_key))).status_code == 404
        gone = await console.get("secrets/app")
        assert gone.status_code == 404


async def test_a_readonly_member_sees_no_write_controls_and_a_forged_write_is_refused(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "prod")
    await factory.member(tenant.id, "viewer@example.com", Role.readonly)
    path = f"{tenant.path}/secrets/app"
    created = await client.post(
        f"{tenant.path}/secrets",
        json={"name": "app", "secretPath": "a", "sync": [{"cluster": "prod", "namespace": "a"}]},
        headers=bearer(tenant.admin_key),
    )
    assert created.status_code == 201
    async with console_session(app, tenant.name, "viewer@example.com") as console:
        listed = await console.get("secrets")
        assert 'data-secret="app"' in listed.text
        assert "Create secret" not in listed.text
        detail = await console.get("secrets/app")
        assert 'data-target="prod/a/app"' in detail.text
        assert "Edit sync targets" not in detail.text
        assert "Delete secret" not in detail.text

        forged_create = await console.post("secrets", {"name": "other", "secretPath": "b"})
        assert forged_create.status_code == 403
        assert "admin access required" in forged_create.text
        forged_edit = await console.post("secrets/app/targets", target_rows(BLANK))
        assert forged_edit.status_code == 403
        forged_delete = await console.post("secrets/app/delete", {"confirm": "app"})
        assert forged_delete.status_code == 403
        stored = await client.get(path, headers=bearer(tenant.admin_key))
        assert stored.status_code == 200
        assert len(stored.json()["sync"]) == 1
        assert (
            await client.get(f"{tenant.path}/secrets/other", headers=bearer(tenant.admin_key))
        ).status_code == 404
