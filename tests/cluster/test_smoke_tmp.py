from __future__ import annotations

import httpx

from tests.cluster.polling import phase_is, poll
from tests.factories import Factory
from tests.http_client import bearer


async def test_smoke(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    h = bearer(tenant.admin_key)
    r = await client.post(f"{tenant.path}/clusters", json={"name": "dev", "highAvailability": True, "version": "1.31"}, headers=h)
    print(r.status_code, r.json())
    assert r.status_code == 201
    r = await poll(client, f"{tenant.path}/clusters/dev", h, phase_is("Running"), "running")
    r = await poll(client, f"{tenant.path}/clusters/dev", h, lambda r: r.json()["status"]["haPhase"] == "ha-healthy", "healthy")
    print(r.json(), r.headers)
    r = await client.patch(f"{tenant.path}/clusters/dev", json={"version": "1.32"}, headers=h)
    print(r.status_code, r.json())
    r = await poll(client, f"{tenant.path}/clusters/dev", h, lambda r: r.json()["status"]["kubernetesVersion"].startswith("v1.32"), "upgraded")
    print(r.json())
    r = await client.get(f"{tenant.path}/clusters/dev/connection-details", headers=h)
    print(r.status_code, r.json()["endpoint"])
    r = await client.delete(f"{tenant.path}/clusters/dev", headers=h)
    print(r.status_code, r.json()["status"]["phase"])
    r = await poll(client, f"{tenant.path}/clusters/dev", h, lambda r: r.status_code == 404, "gone")
