from __future__ import annotations

import asyncio

import httpx
import pytest

from tenantplane.member.models import Role
from tests.factories import Factory, TenantFixture
from tests.http_client import bearer


async def members_of(client: httpx.AsyncClient, tenant: TenantFixture) -> dict[str, str]:
    listed = await client.get(f"{tenant.path}/members", headers=bearer(tenant.readonly_key))
    assert listed.status_code == 200, listed.text
    return {item["email"]: item["role"] for item in listed.json()["items"]}


async def add(
    client: httpx.AsyncClient, tenant: TenantFixture, email: str, role: str = "readonly"
) -> httpx.Response:
    return await client.post(
        f"{tenant.path}/members",
        json={"email": email, "role": role},
        headers=bearer(tenant.admin_key),
    )


async def test_added_member_is_listed_normalised_with_versions(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    before = await client.get(f"{tenant.path}/members", headers=bearer(tenant.readonly_key))
    assert before.json() == {"items": [{"email": tenant.admin_email, "role": "admin"}]}
    list_etag = before.headers["ETag"]

    created = await add(client, tenant, "  Dev.Ops+ci@Example.COM ", "readonly")
    assert created.status_code == 201, created.text
    assert created.json() == {"email": "dev.ops+ci@example.com", "role": "readonly"}
    # POST answers the member list's new version, the one a next If-Match would name.
    assert created.headers["ETag"] != list_etag
    after = await client.get(f"{tenant.path}/members", headers=bearer(tenant.readonly_key))
    assert after.headers["ETag"] == created.headers["ETag"]
    assert {item["email"] for item in after.json()["items"]} == {
        tenant.admin_email,
        "dev.ops+ci@example.com",
    }

    one = await client.get(
        f"{tenant.path}/members/DEV.OPS+CI@example.com", headers=bearer(tenant.readonly_key)
    )
    assert one.status_code == 200
    assert one.json() == {"email": "dev.ops+ci@example.com", "role": "readonly"}
    assert one.headers["ETag"] == '"1"'


async def test_duplicate_email_in_any_case_is_409(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    assert (await add(client, tenant, "ana@example.com")).status_code == 201
    again = await add(client, tenant, "ANA@Example.com", "admin")
    assert again.status_code == 409
    assert again.json()["code"] == "ALREADY_EXISTS"
    assert again.json()["field"] == "email"
    assert (await members_of(client, tenant))["ana@example.com"] == "readonly"


async def test_same_email_may_be_member_of_two_tenants(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    first, second = await factory.tenant(), await factory.tenant()
    assert (await add(client, first, "ana@example.com")).status_code == 201
    assert (await add(client, second, "ana@example.com", "admin")).status_code == 201
    assert (await members_of(client, second))["ana@example.com"] == "admin"


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({"email": "not-an-email", "role": "readonly"}, "email", "VALIDATION_FAILED"),
        ({"email": "a@b@example.com", "role": "readonly"}, "email", "VALIDATION_FAILED"),
        ({"email": "", "role": "readonly"}, "email", "VALIDATION_FAILED"),
        ({"email": "x" * 400 + "@example.com", "role": "admin"}, "email", "VALIDATION_FAILED"),
        ({"email": 7, "role": "readonly"}, "email", "VALIDATION_FAILED"),
        ({"email": "ana@example.com", "role": "owner"}, "role", "VALIDATION_FAILED"),
        ({"email": "ana@example.com", "role": "Admin"}, "role", "VALIDATION_FAILED"),
        ({"email": "ana@example.com"}, "role", "VALIDATION_FAILED"),
        ({"role": "admin"}, "email", "VALIDATION_FAILED"),
        ({"email": "ana@example.com", "role": "admin", "name": "Ana"}, "name", "UNKNOWN_FIELD"),
    ],
)
async def test_invalid_member_is_400_naming_the_field_and_adds_nothing(
    client: httpx.AsyncClient,
    factory: Factory,
    body: dict[str, object],
    field: str,
    code: str,
) -> None:
    tenant = await factory.tenant()
    response = await client.post(
        f"{tenant.path}/members", json=body, headers=bearer(tenant.admin_key)
    )
    assert response.status_code == 400, response.text
    assert response.json()["field"] == field
    assert response.json()["code"] == code
    assert await members_of(client, tenant) == {tenant.admin_email: "admin"}


async def test_if_match_on_post_compares_with_the_member_list_version(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    listed = await client.get(f"{tenant.path}/members", headers=bearer(tenant.admin_key))
    etag = listed.headers["ETag"]
    first = await client.post(
        f"{tenant.path}/members",
        json={"email": "one@example.com", "role": "readonly"},
        headers={**bearer(tenant.admin_key), "If-Match": etag},
    )
    assert first.status_code == 201, first.text
    stale = await client.post(
        f"{tenant.path}/members",
        json={"email": "two@example.com", "role": "readonly"},
        headers={**bearer(tenant.admin_key), "If-Match": etag},
    )
    assert stale.status_code == 412
    assert stale.json()["code"] == "PRECONDITION_FAILED"
    assert "two@example.com" not in await members_of(client, tenant)
    fresh = await client.post(
        f"{tenant.path}/members",
        json={"email": "two@example.com", "role": "readonly"},
        headers={**bearer(tenant.admin_key), "If-Match": first.headers["ETag"].strip('"')},
    )
    assert fresh.status_code == 201
    anything = await client.post(
        f"{tenant.path}/members",
        json={"email": "three@example.com", "role": "readonly"},
        headers={**bearer(tenant.admin_key), "If-Match": "*"},
    )
    assert anything.status_code == 201


async def test_role_change_and_removal(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    await add(client, tenant, "ana@example.com")
    promoted = await client.patch(
        f"{tenant.path}/members/Ana@Example.com",
        json={"role": "admin"},
        headers=bearer(tenant.admin_key),
    )
    assert promoted.status_code == 200, promoted.text
    assert promoted.json() == {"email": "ana@example.com", "role": "admin"}
    assert promoted.headers["ETag"] == '"2"'

    stale = await client.patch(
        f"{tenant.path}/members/ana@example.com",
        json={"role": "readonly"},
        headers={**bearer(tenant.admin_key), "If-Match": '"1"'},
    )
    assert stale.status_code == 412
    stale_delete = await client.delete(
        f"{tenant.path}/members/ana@example.com",
        headers={**bearer(tenant.admin_key), "If-Match": '"1"'},
    )
    assert stale_delete.status_code == 412

    removed = await client.delete(
        f"{tenant.path}/members/ana@example.com",
        headers={**bearer(tenant.admin_key), "If-Match": '"2"'},
    )
    assert removed.status_code == 204
    assert "ana@example.com" not in await members_of(client, tenant)
    for response in (
        await client.delete(
            f"{tenant.path}/members/ana@example.com", headers=bearer(tenant.admin_key)
        ),
        await client.get(
            f"{tenant.path}/members/ana@example.com", headers=bearer(tenant.admin_key)
        ),
        await client.patch(
            f"{tenant.path}/members/ana@example.com",
            json={"role": "admin"},
            headers=bearer(tenant.admin_key),
        ),
    ):
        assert response.status_code == 404
        assert response.json()["code"] == "NOT_FOUND"


@pytest.mark.parametrize(
    ("method", "body", "field"),
    [
        ("PATCH", {"role": "owner"}, "role"),
        ("PATCH", {}, "role"),
        ("PATCH", {"role": "admin", "email": "x@example.com"}, "email"),
    ],
)
async def test_invalid_role_change_is_400(
    client: httpx.AsyncClient, factory: Factory, method: str, body: dict[str, str], field: str
) -> None:
    tenant = await factory.tenant()
    response = await client.request(
        method,
        f"{tenant.path}/members/{tenant.admin_email}",
        json=body,
        headers=bearer(tenant.admin_key),
    )
    assert response.status_code == 400, response.text
    assert response.json()["field"] == field


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE"])
async def test_invalid_email_in_path_is_400(
    client: httpx.AsyncClient, factory: Factory, method: str
) -> None:
    tenant = await factory.tenant()
    response = await client.request(
        method,
        f"{tenant.path}/members/not-an-email",
        json={"role": "admin"} if method == "PATCH" else None,
        headers=bearer(tenant.admin_key),
    )
    assert response.status_code == 400, response.text
    assert response.json()["field"] == "email"


async def test_last_admin_can_be_neither_demoted_nor_removed(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    path = f"{tenant.path}/members/{tenant.admin_email}"
    demoted = await client.patch(path, json={"role": "readonly"}, headers=bearer(tenant.admin_key))
    assert demoted.status_code == 409
    assert demoted.json()["code"] == "LAST_ADMIN"
    removed = await client.delete(path, headers=bearer(tenant.admin_key))
    assert removed.status_code == 409
    assert removed.json()["code"] == "LAST_ADMIN"
    # Unchanged role is not a demotion.
    same = await client.patch(path, json={"role": "admin"}, headers=bearer(tenant.admin_key))
    assert same.status_code == 200

    await add(client, tenant, "second@example.com", "admin")
    assert (
        await client.patch(path, json={"role": "readonly"}, headers=bearer(tenant.admin_key))
    ).status_code == 200
    last = await client.delete(
        f"{tenant.path}/members/second@example.com", headers=bearer(tenant.admin_key)
    )
    assert last.status_code == 409
    assert last.json()["code"] == "LAST_ADMIN"
    # A readonly member is never "the last admin".
    assert (await client.delete(path, headers=bearer(tenant.admin_key))).status_code == 204
    assert await members_of(client, tenant) == {"second@example.com": "admin"}


async def two_warm_admin_keys(
    client: httpx.AsyncClient, factory: Factory, tenant: TenantFixture
) -> tuple[str, str]:
    """Two admin keys, each used once already: concurrent requests with one key, or with
    keys used for the first time, would queue behind each other on the key's lastUsedAt
    write and never race."""
    keys = (tenant.admin_key, await factory.api_key(tenant.id, Role.admin))
    for key in keys:
        assert (await client.get(tenant.path, headers=bearer(key))).status_code == 200
    return keys


async def test_concurrent_demotions_leave_an_admin(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await factory.member(tenant.id, "second@example.com", Role.admin)
    first_key, second_key = await two_warm_admin_keys(client, factory, tenant)
    responses = await asyncio.gather(
        client.patch(
            f"{tenant.path}/members/{tenant.admin_email}",
            json={"role": "readonly"},
            headers=bearer(first_key),
        ),
        client.delete(f"{tenant.path}/members/second@example.com", headers=bearer(second_key)),
    )
    assert sorted(response.status_code for response in responses) in ([200, 409], [204, 409])
    conflict = next(response for response in responses if response.status_code == 409)
    assert conflict.json()["code"] == "LAST_ADMIN"
    assert "admin" in (await members_of(client, tenant)).values()


async def test_concurrent_adds_of_one_email_make_one_member(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    keys = await two_warm_admin_keys(client, factory, tenant)
    spellings = ["ana@example.com", "ANA@example.com", "Ana@Example.Com", "ana@EXAMPLE.com"]
    responses = await asyncio.gather(
        *(
            client.post(
                f"{tenant.path}/members",
                json={"email": email, "role": "readonly"},
                headers=bearer(keys[index % 2]),
            )
            for index, email in enumerate(spellings)
        )
    )
    assert sorted(response.status_code for response in responses) == [201, 409, 409, 409]
    assert await members_of(client, tenant) == {
        tenant.admin_email: "admin",
        "ana@example.com": "readonly",
    }


async def test_readonly_caller_may_read_but_not_change_members(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    assert (await members_of(client, tenant)) == {tenant.admin_email: "admin"}
    attempts = [
        client.post(
            f"{tenant.path}/members",
            json={"email": "x@example.com", "role": "admin"},
            headers=bearer(tenant.readonly_key),
        ),
        client.patch(
            f"{tenant.path}/members/{tenant.admin_email}",
            json={"role": "readonly"},
            headers=bearer(tenant.readonly_key),
        ),
        client.delete(
            f"{tenant.path}/members/{tenant.admin_email}", headers=bearer(tenant.readonly_key)
        ),
    ]
    for response in await asyncio.gather(*attempts):
        assert response.status_code == 403
    assert await members_of(client, tenant) == {tenant.admin_email: "admin"}
