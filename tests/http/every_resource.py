"""One tenant holding one resource of every kind, made through the API, and the concrete
path of any route template of the app, found by listing the collection above it: a route
added later is reached without naming it here."""

from __future__ import annotations

import re
from typing import Any

import httpx

from tests.billing.conftest import Billing
from tests.billing.test_cycle import at
from tests.factories import Factory, TenantFixture
from tests.http_client import bearer

PARAMETER = re.compile(r"\{([^}:]+)(?::[^}]*)?\}")
# Fields that name an item of a list, in the order they are tried.
IDENTIFIERS = ("name", "email", "id", "filename")
TEMPLATE = '{{ define "mail.subject" }}[{{ .Status }}]{{ end }}'
WINDOW = [{"weekdays": ["monday:friday"], "times": [{"start_time": "09:00", "end_time": "17:00"}]}]

# What each creating call answers: status and the path of the resource it made.
CREATIONS: list[tuple[str, str, dict[str, Any], str]] = [
    ("POST", "/clusters", {"name": "prod"}, "/clusters/prod"),
    ("POST", "/secrets", {"name": "db", "secretPath": "apps/db"}, "/secrets/db"),
    (
        "POST",
        "/members",
        {"email": "reader@example.com", "role": "readonly"},
        "/members/reader@example.com",
    ),
    (
        "PUT",
        "/alerting/receivers/ops",
        {"webhook_configs": [{"url": "https://hooks.example.com/alerts"}]},
        "/alerting/receivers/ops",
    ),
    ("PUT", "/alerting/routes/0", {"receiver": "ops"}, "/alerting/routes/0"),
    (
        "PUT",
        "/alerting/templates/mail.tmpl",
        {"contents": TEMPLATE},
        "/alerting/templates/mail.tmpl",
    ),
    (
        "PUT",
        "/alerting/time-intervals/office",
        {"time_intervals": WINDOW},
        "/alerting/time-intervals/office",
    ),
]


async def create_everything(
    deployment: Billing, factory: Factory, tenant: TenantFixture
) -> list[tuple[str, httpx.Response]]:
    """Make one resource of every kind in ``tenant``; the creating answers, with the path
    (below the tenant) of what each made. API keys come from the factory's tenant and a
    POST below, as do a webhook and its ping's delivery; invoices from a billing run over two
    past months."""
    headers = bearer(tenant.admin_key)
    answers = []
    for method, path, body, made in CREATIONS:
        response = await deployment.client.request(
            method, f"{tenant.path}{path}", json=body, headers=headers
        )
        assert response.status_code == 201, (method, path, response.text)
        answers.append((made, response))
    key = await deployment.client.post(
        f"{tenant.path}/apikeys", json={"displayName": "ci", "role": "readonly"}, headers=headers
    )
    assert key.status_code == 201, key.text
    answers.append((f"/apikeys/{key.json()['id']}", key))
    # A host that never resolves: nothing is sent anywhere.
    hook = {"url": "https://hooks.example.invalid/t", "events": ["*"]}
    webhook = await deployment.client.post(f"{tenant.path}/webhooks", json=hook, headers=headers)
    assert webhook.status_code == 201, webhook.text
    webhook_path = f"/webhooks/{webhook.json()['id']}"
    answers.append((webhook_path, webhook))
    # A delivery to list and to read: the ping's.
    ping = await deployment.client.post(f"{tenant.path}{webhook_path}/ping", headers=headers)
    assert ping.status_code == 202, ping.text
    await factory.billing.backdate_tenant(tenant.id, at("2026-08-01T00:00:00"))
    await deployment.run("2026-10-01T00:00:00Z")
    return answers


def _identifier(item: Any, index: int) -> str:
    if isinstance(item, dict):
        for field in IDENTIFIERS:
            if isinstance(item.get(field), str):
                return str(item[field])
    return str(index)


def _items(document: Any) -> list[Any]:
    if isinstance(document, dict) and isinstance(document.get("items"), list):
        return list(document["items"])
    if isinstance(document, list):
        return document
    raise AssertionError(f"not a list: {document!r}")


async def concrete_path(
    client: httpx.AsyncClient, template: str, tenant: TenantFixture, headers: dict[str, str]
) -> str:
    """``template`` (below /api/v1) with each parameter filled: the tenant's name, else the
    first item of the list found at the path before the parameter."""
    path = ""
    for segment in template.strip("/").split("/"):
        match = PARAMETER.fullmatch(segment)
        if match is None:
            path += f"/{segment}"
            continue
        if match.group(1) == "tenant":
            path += f"/{tenant.name}"
            continue
        listing = await client.get(path, headers=headers)
        assert listing.status_code == 200, f"cannot list {path} to fill {template}"
        items = _items(listing.json())
        assert items, f"{path} lists nothing: make one in create_everything for {template}"
        path += f"/{_identifier(items[0], 0)}"
    return path
