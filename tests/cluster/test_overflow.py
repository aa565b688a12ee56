"""Resource quantities too large for the normalised 63-bit columns are refused as input."""

from __future__ import annotations

import httpx
import pytest

from tests.factories import Factory
from tests.http_client import bearer

# Each fits the grammar; normalised to bytes, each is beyond int64 (2**63 - 1).
OVERFLOWING = ["1e19", "1e400", "1e99999999999", "8Ei", "99999999999999999999"]
# CPU is normalised to millicores: these fit as bytes but not as millicores.
OVERFLOWING_CPU = ["9e18", "9223372036854776", "9223372036854775.808"]


def overflowing(field: str) -> list[str]:
    return OVERFLOWING + (OVERFLOWING_CPU if field == "cpu" else [])


@pytest.mark.parametrize("field", ["cpu", "memory", "storage"])
async def test_create_with_an_overflowing_quantity_is_400_and_stores_nothing(
    client: httpx.AsyncClient, factory: Factory, field: str
) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    for value in overflowing(field):
        response = await client.post(
            f"{tenant.path}/clusters",
            json={"name": "huge", "resources": {field: value}},
            headers=headers,
        )
        assert response.status_code == 400, (value, response.text)
        assert response.json()["code"] == "VALIDATION_FAILED"
        assert response.json()["field"] == f"resources.{field}"
    listed = await client.get(f"{tenant.path}/clusters", headers=headers)
    assert listed.status_code == 200
    assert listed.json()["items"] == []


@pytest.mark.parametrize("field", ["cpu", "memory", "storage"])
async def test_patch_with_an_overflowing_quantity_is_400_and_changes_nothing(
    client: httpx.AsyncClient, factory: Factory, field: str
) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    cluster = await factory.cluster_row(tenant.id, "dev")
    before = (await client.get(f"{tenant.path}/clusters/{cluster.name}", headers=headers)).json()
    for value in overflowing(field):
        response = await client.patch(
            f"{tenant.path}/clusters/{cluster.name}",
            json={"resources": {field: value}},
            headers=headers,
        )
        assert response.status_code == 400, (value, response.text)
        assert response.json()["code"] == "VALIDATION_FAILED"
        assert response.json()["field"] == f"resources.{field}"
    after = await client.get(f"{tenant.path}/clusters/{cluster.name}", headers=headers)
    assert after.status_code == 200
    assert after.json()["resources"] == before["resources"]
    assert after.json()["resourceVersion"] == before["resourceVersion"]
