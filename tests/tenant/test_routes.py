from __future__ import annotations

import httpx
import pytest

from tenantplane.http.errors import ValidationFailed
from tests.factories import Factory
from tests.http_client import bearer


async def test_members_read_the_tenant_with_an_etag(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    response = await client.get(tenant.path, headers=bearer(tenant.readonly_key))
    assert response.status_code == 200
    assert response.json() == {
        "name": tenant.name,
        "plan": "starter",
        "enforceMetricsLimit": False,
        "enforceLogLimit": False,
        "state": "active",
    }
    assert response.headers["ETag"] == '"1"'


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"plan": "enterprise"}, "plan"),
        ({"plan": "no-such-plan"}, "plan"),
        ({"enforceMetricsLimit": False}, "enforceMetricsLimit"),
        ({"enforceLogLimit": True}, "enforceLogLimit"),
        ({"plan": None}, "plan"),
        ({"state": "active"}, "state"),
    ],
)
async def test_platform_managed_fields_are_refused_with_403(
    client: httpx.AsyncClient, factory: Factory, body: dict[str, object], field: str
) -> None:
    tenant = await factory.tenant()
    response = await client.patch(tenant.path, json=body, headers=bearer(tenant.admin_key))
    assert response.status_code == 403
    assert response.json()["code"] == "PLATFORM_MANAGED_FIELD"
    assert response.json()["field"] == field
    unchanged = await client.get(tenant.path, headers=bearer(tenant.admin_key))
    assert unchanged.json()["plan"] == "starter"
    assert unchanged.headers["ETag"] == '"1"'


async def test_patch_without_updatable_fields_is_400(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    response = await client.patch(tenant.path, json={}, headers=bearer(tenant.admin_key))
    assert response.status_code == 400
    assert response.json()["code"] == "NO_UPDATABLE_FIELDS"
    unknown = await client.patch(tenant.path, json={"name": "x"}, headers=bearer(tenant.admin_key))
    assert unknown.status_code == 400
    assert unknown.json()["code"] == "UNKNOWN_FIELD"


async def test_patch_needs_admin(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    response = await client.patch(tenant.path, json={}, headers=bearer(tenant.readonly_key))
    assert response.status_code == 403


async def test_non_members_learn_nothing_about_tenant_existence(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant, other = await factory.tenant(), await factory.tenant()
    existing = await client.get(other.path, headers=bearer(tenant.admin_key))
    missing = await client.get("/tenants/no-such-tenant", headers=bearer(tenant.admin_key))
    assert existing.status_code == missing.status_code == 403
    assert existing.json() == missing.json()
    for path in (other.path, "/tenants/no-such-tenant"):
        patch = await client.patch(path, json={"plan": "pro"}, headers=bearer(tenant.admin_key))
        assert patch.status_code == 403
        assert "code" not in patch.json()


async def test_invalid_tenant_name_is_400(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    for name in ("UPPER", "a", "-dash", "x" * 64, "under_score"):
        response = await client.get(f"/tenants/{name}", headers=bearer(tenant.admin_key))
        assert response.status_code == 400, name
        assert response.json()["code"] == "INVALID_NAME"
        assert response.json()["field"] == "tenant"


async def test_tenant_names_fit_their_kubernetes_namespace(factory: Factory) -> None:
    """A tenant's clusters live in the namespace tp-<tenant>, a DNS label of 63 at most."""
    await factory.tenant("t" * 60)
    with pytest.raises(ValidationFailed, match="2-60 characters"):
        await factory.tenant("u" * 61)
