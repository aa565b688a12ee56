"""A name with a control character or a space at its end is refused by every field and path
that takes one (Python's ``$`` matches before a final newline: ``re.match(r"^a$", "a\\n")`` is
a match, so every rule is a full match)."""

from __future__ import annotations

from urllib.parse import quote

import httpx
import pytest

from tenantplane.http.errors import ValidationFailed
from tests.factories import Factory
from tests.http_client import bearer

ENDINGS = ["\n", "\r", "\t", "\x00", " ", "\r\n"]


def with_endings(name: str) -> list[str]:
    return [name + ending for ending in ENDINGS]


@pytest.mark.parametrize("name", with_endings("dev"))
async def test_a_cluster_name(client: httpx.AsyncClient, factory: Factory, name: str) -> None:
    tenant = await factory.tenant()
    response = await client.post(
        f"{tenant.path}/clusters", json={"name": name}, headers=bearer(tenant.admin_key)
    )
    assert response.status_code == 400, response.text
    assert response.json()["field"] == "name"
    listed = await client.get(f"{tenant.path}/clusters", headers=bearer(tenant.admin_key))
    assert listed.json()["items"] == []


@pytest.mark.parametrize(
    ("field", "body"),
    [
        *[("name", {"name": bad, "secretPath": "apps/db"}) for bad in with_endings("db")],
        *[("secretPath", {"name": "db", "secretPath": bad}) for bad in with_endings("apps/db")],
        *[
            ("sync[0].namespace", {"name": "db", "secretPath": "a", "sync": [target]})
            for target in ({"cluster": "dev", "namespace": bad} for bad in with_endings("app"))
        ],
        *[
            ("sync[0].secretName", {"name": "db", "secretPath": "a", "sync": [target]})
            for target in (
                {"cluster": "dev", "namespace": "app", "secretName": bad}
                for bad in with_endings("db")
            )
        ],
        *[
            ("sync[0].cluster", {"name": "db", "secretPath": "a", "sync": [target]})
            for target in ({"cluster": bad, "namespace": "app"} for bad in with_endings("dev"))
        ],
    ],
)
async def test_secret_fields(
    client: httpx.AsyncClient, factory: Factory, field: str, body: dict[str, object]
) -> None:
    tenant = await factory.tenant()
    response = await client.post(
        f"{tenant.path}/secrets", json=body, headers=bearer(tenant.admin_key)
    )
    assert response.status_code == 400, response.text
    assert response.json()["field"] == field
    listed = await client.get(f"{tenant.path}/secrets", headers=bearer(tenant.admin_key))
    assert listed.json()["items"] == []


@pytest.mark.parametrize("ending", ENDINGS)
async def test_names_in_paths(client: httpx.AsyncClient, factory: Factory, ending: str) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    for path in (
        f"/tenants/{quote(tenant.name + ending)}",
        f"{tenant.path}/clusters/{quote('dev' + ending)}",
        f"{tenant.path}/secrets/{quote('db' + ending)}",
        f"{tenant.path}/invoices/{quote('inv-1' + ending)}",
        f"{tenant.path}/alerting/routes/{quote('0' + ending)}",
    ):
        response = await client.get(path, headers=headers)
        assert response.status_code == 400, (path, response.text)


@pytest.mark.parametrize("name", with_endings("acme"))
async def test_a_tenant_name(factory: Factory, name: str) -> None:
    with pytest.raises(ValidationFailed):
        await factory.tenant(name)
