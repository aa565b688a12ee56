"""No event holds secret material: every stored event is searched for the values written."""

from __future__ import annotations

import httpx
from sqlalchemy import select

from tenantplane.db.engine import Database
from tenantplane.event.models import Event
from tests.cluster.polling import create_cluster, wait_running
from tests.factories import Factory
from tests.http_client import bearer

PASSWORD = "hunter2-very-secret-receiver-password"
SLACK = "https://hooks.slack.com/services/T000/B000/very-secret-slack-token"


async def test_no_event_holds_a_key_a_token_or_a_credential(
    client: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    admin = bearer(tenant.admin_key)
    written: list[str] = [tenant.admin_key, tenant.readonly_key]

    key = await client.post(
        f"{tenant.path}/apikeys", json={"displayName": "ci", "role": "admin"}, headers=admin
    )
    assert key.status_code == 201, key.text
    written.append(key.json()["key"])
    # A write refused to the new key: its refusal is recorded, the key is not.
    refused = await client.delete(
        f"{tenant.path}/clusters/none", headers=bearer(tenant.readonly_key)
    )
    assert refused.status_code == 403

    await create_cluster(client, tenant.path, tenant.admin_key, "web")
    await wait_running(client, tenant.path, tenant.admin_key, "web")
    token = await client.post(f"{tenant.path}/clusters/web/credentials", headers=admin)
    assert token.status_code == 200, token.text
    written.append(token.json()["token"])

    receiver = {
        "name": "pager",
        "slack_configs": [{"channel": "#ops", "api_url": SLACK}],
        "webhook_configs": [
            {
                "url": "https://pager.example.com/hook",
                "http_config": {"basic_auth": {"username": "u", "password": PASSWORD}},
            }
        ],
    }
    put = await client.put(f"{tenant.path}/alerting/receivers/pager", json=receiver, headers=admin)
    assert put.status_code == 201, put.text
    written += [PASSWORD, SLACK]

    hook = {"url": "https://hooks.example.invalid/t", "events": ["*"]}
    created = await client.post(f"{tenant.path}/webhooks", json=hook, headers=admin)
    assert created.status_code == 201, created.text
    rotated = await client.post(
        f"{tenant.path}/webhooks/{created.json()['id']}/rotate-secret", headers=admin
    )
    assert rotated.status_code == 200, rotated.text
    written += [created.json()["secret"], rotated.json()["secret"]]

    async with database.transaction() as session:
        bodies = (
            (await session.execute(select(Event.body).where(Event.tenant_id == tenant.id)))
            .scalars()
            .all()
        )
    assert len(bodies) >= 5
    leaked = [value for value in written for body in bodies if value in body]
    assert leaked == []
