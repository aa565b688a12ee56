"""Tenant states: what a cancelled or suspended tenant may still do."""

from __future__ import annotations

from tests.factories import Factory
from tests.http_client import bearer
from tests.tenant.conftest import Operated


async def test_a_cancelled_tenant_refuses_writes_and_keeps_its_invoices(
    deployment: Operated, factory: Factory
) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    await deployment.cli("tenant", "cancel", tenant.name)

    cluster = await deployment.client.post(
        f"{tenant.path}/clusters", json={"name": "late", "highAvailability": True}, headers=headers
    )
    assert cluster.status_code == 403, cluster.text
    assert cluster.json()["code"] == "TENANT_CANCELLED"
    key = await deployment.client.post(
        f"{tenant.path}/apikeys", json={"displayName": "late", "role": "admin"}, headers=headers
    )
    assert key.status_code == 403
    assert key.json()["code"] == "TENANT_CANCELLED"
    invoices = await deployment.client.get(f"{tenant.path}/invoices", headers=headers)
    assert invoices.status_code == 200
    assert [item["name"] for item in invoices.json()["items"]][-1].endswith("-final")
