"""The members page: invite, change of role, removal; the API's refusal to lose the last
admin explained beside the action; readonly viewers get no controls and a forged write is
refused."""

from __future__ import annotations

import html
import re

import httpx
from fastapi import FastAPI

from tenantplane.console.pages.members import LAST_ADMIN_EXPLANATION
from tenantplane.member.models import Role
from tests.console.session import console_session
from tests.factories import Factory, TenantFixture
from tests.http_client import bearer


async def roles(client: httpx.AsyncClient, tenant: TenantFixture) -> dict[str, str]:
    listed = await client.get(f"{tenant.path}/members", headers=bearer(tenant.admin_key))
    assert listed.status_code == 200
    return {item["email"]: item["role"] for item in listed.json()["items"]}


def refusal_in_row(page: httpx.Response, action: str) -> str:
    found = re.search(rf'data-refusal="{action}">(.+?)</p>', page.text)
    assert found is not None, page.text
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1)))


async def test_an_admin_invites_a_member_changes_their_role_and_removes_them(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        page = await console.get("members")
        assert f'data-member="{tenant.admin_email}"' in page.text
        assert "Invite a member" in page.text

        invited = await console.post("members", {"email": "New@Example.com", "role": "readonly"})
        assert invited.status_code == 303, invited.text
        assert (await roles(client, tenant))["new@example.com"] == "readonly"
        listed = await console.get("members")
        assert 'data-member="new@example.com"' in listed.text

        again = await console.post("members", {"email": "new@example.com", "role": "admin"})
        assert again.status_code == 409
        assert "already a member" in again.text
        assert 'id="f-email-error"' in again.text
        invalid = await console.post("members", {"email": "not an email", "role": "readonly"})
        assert invalid.status_code == 400
        assert 'id="f-email-error"' in invalid.text
        assert 'value="not an email"' in invalid.text

        promoted = await console.post("members/role", {"email": "new@example.com", "role": "admin"})
        assert promoted.status_code == 303
        assert (await roles(client, tenant))["new@example.com"] == "admin"

        removed = await console.post("members/remove", {"email": "new@example.com"})
        assert removed.status_code == 303
        assert "new@example.com" not in await roles(client, tenant)


async def test_the_last_admin_refusal_is_explained_beside_the_action(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await factory.member(tenant.id, "viewer@example.com", Role.readonly)
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        demoted = await console.post(
            "members/role", {"email": tenant.admin_email, "role": "readonly"}
        )
        assert demoted.status_code == 409
        note = refusal_in_row(demoted, "role")
        assert LAST_ADMIN_EXPLANATION in note
        assert "the last admin of a tenant cannot be demoted" in note  # the API's own words
        row = demoted.text.split(f'data-member="{tenant.admin_email}"')[1].split("</tr>")[0]
        assert "data-refusal" in row
        assert 'aria-invalid="true"' in row

        removed = await console.post("members/remove", {"email": tenant.admin_email})
        assert removed.status_code == 409
        note = refusal_in_row(removed, "remove")
        assert LAST_ADMIN_EXPLANATION in note
        assert "cannot be removed" in note
        assert (await roles(client, tenant))[tenant.admin_email] == "admin"

        # With a second admin, the first may step down.
        promoted = await console.post(
            "members/role", {"email": "viewer@example.com", "role": "admin"}
        )
        assert promoted.status_code == 303
        stepped_down = await console.post(
            "members/role", {"email": tenant.admin_email, "role": "readonly"}
        )
        assert stepped_down.status_code == 303
        assert (await roles(client, tenant))[tenant.admin_email] == "readonly"


async def test_a_readonly_member_sees_no_controls_and_a_forged_write_is_refused(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await factory.member(tenant.id, "viewer@example.com", Role.readonly)
    async with console_session(app, tenant.name, "viewer@example.com") as console:
        page = await console.get("members")
        assert page.status_code == 200
        assert f'data-member="{tenant.admin_email}"' in page.text
        assert "Invite a member" not in page.text
        assert "Change role" not in page.text
        assert "Remove" not in page.text

        forged_invite = await console.post("members", {"email": "x@example.com", "role": "admin"})
        assert forged_invite.status_code == 403
        assert "admin access required" in forged_invite.text
        forged_role = await console.post(
            "members/role", {"email": "viewer@example.com", "role": "admin"}
        )
        assert forged_role.status_code == 403
        assert "admin access required" in refusal_in_row(forged_role, "role")
        forged_remove = await console.post("members/remove", {"email": tenant.admin_email})
        assert forged_remove.status_code == 403
    assert await roles(client, tenant) == {
        tenant.admin_email: "admin",
        "viewer@example.com": "readonly",
    }
