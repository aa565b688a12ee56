"""What a webhook may be: its body's validation errors, in the envelope and naming the
field, and its URL through the destinations firewall when it is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tenantplane.db.engine import Database
from tests.conftest import make_settings
from tests.event.webhook.conftest import create_webhook
from tests.factories import Factory
from tests.http_client import api_client, bearer, running_app

# Never resolves (RFC 6761): the app's reconcilers here send nothing anywhere.
HOOK = "https://hooks.example.invalid/tenantplane"


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({"events": ["*"]}, "url", "VALIDATION_FAILED"),
        ({"url": HOOK}, "events", "VALIDATION_FAILED"),
        ({"url": HOOK, "events": []}, "events", "VALIDATION_FAILED"),
        ({"url": HOOK, "events": ["*"] * 51}, "events", "VALIDATION_FAILED"),
        (
            {"url": HOOK, "events": ["cluster.*", "Cluster.Create"]},
            "events[1]",
            "VALIDATION_FAILED",
        ),
        ({"url": HOOK, "events": ["*cluster"]}, "events[0]", "VALIDATION_FAILED"),
        ({"url": HOOK, "events": ["cluster.*.x"]}, "events[0]", "VALIDATION_FAILED"),
        ({"url": HOOK, "events": ["a" * 82]}, "events[0]", "VALIDATION_FAILED"),
        ({"url": HOOK, "events": [7]}, "events[0]", "VALIDATION_FAILED"),
        (
            {"url": HOOK, "events": ["*"], "description": "a\u202eb"},
            "description",
            "FORBIDDEN_CHARACTER",
        ),
        (
            {"url": HOOK, "events": ["*"], "description": "x" * 501},
            "description",
            "VALIDATION_FAILED",
        ),
        ({"url": HOOK, "events": ["*"], "secret": "whsec_x"}, "secret", "UNKNOWN_FIELD"),
        ({"url": "ftp://hooks.example.com/", "events": ["*"]}, "url", "INVALID_URL"),
        ({"url": "hooks.example.com/x", "events": ["*"]}, "url", "INVALID_URL"),
        ({"url": "https://user:pw@hooks.example.com/", "events": ["*"]}, "url", "INVALID_URL"),
        ({"url": "https://hooks.example.com/#x", "events": ["*"]}, "url", "INVALID_URL"),
        ({"url": "https://hooks.example.com:70000/", "events": ["*"]}, "url", "INVALID_URL"),
        ({"url": "https://exa mple.com/", "events": ["*"]}, "url", "INVALID_URL"),
        ({"url": "https:///x", "events": ["*"]}, "url", "INVALID_URL"),
        ({"url": "https://" + "a" * 2048 + ".com/", "events": ["*"]}, "url", "INVALID_URL"),
    ],
)
async def test_invalid_bodies_are_refused_naming_the_field(
    client: httpx.AsyncClient,
    factory: Factory,
    body: dict[str, Any],
    field: str,
    code: str,
) -> None:
    tenant = await factory.tenant()
    response = await client.post(
        f"{tenant.path}/webhooks", json=body, headers=bearer(tenant.admin_key)
    )
    assert response.status_code == 400, response.text
    error = response.json()
    assert (error["field"], error["code"], error["severity"]) == (field, code, "error"), error
    listed = await client.get(f"{tenant.path}/webhooks", headers=bearer(tenant.admin_key))
    assert listed.json()["items"] == []


async def test_patterns_are_kept_once_each_in_their_order(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    created = await create_webhook(
        client, tenant, HOOK, ["secret.create", "cluster.*", "secret.create", "*"]
    )
    assert created["events"] == ["secret.create", "cluster.*", "*"]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "https://10.1.2.3/hook",
        "https://[::1]/hook",
        "https://[::ffff:169.254.169.254]/latest",
        "http://169.254.169.254/latest/meta-data",
        "https://127.1/",
        "https://0x7f000001/",
        "https://localhost/hook",
        "https://api.localhost/hook",
        "http://0.0.0.0:9000/",
    ],
)
async def test_private_destinations_are_refused_by_default(
    database: Database, database_url: str, tmp_path: Path, factory: Factory, url: str
) -> None:
    """The receivers firewall's settings, at their defaults: private, loopback and
    link-local destinations are refused."""
    tenant = await factory.tenant()
    settings = make_settings(database_url, tmp_path, run_reconcilers=False)
    async with running_app(settings) as app, api_client(app) as client:
        response = await client.post(
            f"{tenant.path}/webhooks",
            json={"url": url, "events": ["*"]},
            headers=bearer(tenant.admin_key),
        )
        assert response.status_code == 400, response.text
        error = response.json()
        assert (error["field"], error["code"]) == ("url", "DESTINATION_BLOCKED"), error
        # A change of URL is judged the same way.
        created = await create_webhook(client, tenant, HOOK, ["*"])
        patched = await client.patch(
            f"{tenant.path}/webhooks/{created['id']}",
            json={"url": url},
            headers=bearer(tenant.admin_key),
        )
        assert patched.status_code == 400
        assert patched.json()["code"] == "DESTINATION_BLOCKED"


async def test_operator_blocked_networks_are_refused(
    database: Database, database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    settings = make_settings(
        database_url,
        tmp_path,
        run_reconcilers=False,
        alerting_firewall_block_private=False,
        alerting_firewall_block_cidrs=["203.0.113.0/24"],
    )
    async with running_app(settings) as app, api_client(app) as client:
        headers = bearer(tenant.admin_key)
        blocked = await client.post(
            f"{tenant.path}/webhooks",
            json={"url": "https://203.0.113.9/hook", "events": ["*"]},
            headers=headers,
        )
        assert blocked.status_code == 400
        assert blocked.json()["code"] == "DESTINATION_BLOCKED"
        # Private ones are allowed by this operator: http too.
        await create_webhook(client, tenant, "http://10.0.0.7:8080/hook", ["*"])
