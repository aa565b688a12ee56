"""Every list endpoint answers items of exactly the shape of the single GET of the same
resource (clusters, secrets, API keys, members, invoices, alerting receivers, routes and time
intervals). It lives beside billing because invoices need the billing deployment fixture."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from tests.billing.conftest import BillingFactoryFn
from tests.billing.test_cycle import at
from tests.factories import Factory
from tests.http_client import bearer


def shape(value: Any) -> Any:
    """The keys of ``value``, recursively (lists by their items' shapes)."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value]
    return type(value).__name__


Identify = Callable[[int, dict[str, Any]], str]

# list path -> how to address one item of it (by its position and its body)
LISTS: dict[str, Identify] = {
    "/clusters": lambda _, item: item["name"],
    "/secrets": lambda _, item: item["name"],
    "/apikeys": lambda _, item: item["id"],
    "/members": lambda _, item: quote(item["email"]),
    "/invoices": lambda _, item: item["name"],
    "/alerting/receivers": lambda _, item: item["name"],
    "/alerting/routes": lambda index, _: str(index),
    "/alerting/time-intervals": lambda _, item: item["name"],
}


async def test_list_items_have_the_shape_of_the_single_get(
    billing: BillingFactoryFn, factory: Factory
) -> None:
    deployment = await billing()
    client = deployment.client
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    await factory.billing.backdate_tenant(tenant.id, at("2026-09-01T00:00:00"))
    await deployment.run("2026-10-01T00:00:00Z")
    await factory.cluster_row(tenant.id, "web")
    await factory.member(tenant.id, "reader@example.com")
    writes = [
        ("POST", "/apikeys", {"displayName": "ci", "role": "readonly"}),
        (
            "POST",
            "/apikeys",
            {"displayName": "cd", "role": "admin", "expiresAt": "2099-01-01T00:00:00+02:00"},
        ),
        ("POST", "/secrets", {"name": "db", "secretPath": "apps/db"}),
        (
            "POST",
            "/secrets",
            {
                "name": "api",
                "secretPath": "apps/api",
                "sync": [{"cluster": "web", "namespace": "x"}],
            },
        ),
        ("PUT", "/alerting/receivers/team", {"webhook_configs": [{"url": "http://h.example/"}]}),
        ("PUT", "/alerting/routes/0", {"receiver": "team", "matchers": ['a="b"']}),
        (
            "PUT",
            "/alerting/time-intervals/nights",
            {"time_intervals": [{"times": [{"start_time": "00:00", "end_time": "06:00"}]}]},
        ),
    ]
    for method, path, body in writes:
        written = await client.request(method, f"{tenant.path}{path}", json=body, headers=headers)
        assert written.status_code in (200, 201), (path, written.text)
    for path, identify in LISTS.items():
        listed = await client.get(f"{tenant.path}{path}", headers=headers)
        assert listed.status_code == 200, (path, listed.text)
        items = listed.json()["items"]
        assert items, f"{path} listed nothing to compare"
        for index, item in enumerate(items):
            single = await client.get(
                f"{tenant.path}{path}/{identify(index, item)}", headers=headers
            )
            assert single.status_code == 200, (path, single.text)
            assert shape(item) == shape(single.json()), path
            assert item == single.json(), path
