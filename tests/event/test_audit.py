"""Every write of the API records exactly one audit event, in the change's transaction.

The writes are read from the app itself (tests/access.py): a route added without a recipe
here fails ``test_every_write_is_recorded_once`` (and one without a row in
event/actions.py keeps the app from starting).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tenantplane.db.engine import Database
from tenantplane.event.actions import audit_action
from tests.access import Operation, introspection_app, operations
from tests.cluster.polling import create_cluster, wait_running
from tests.conftest import make_settings
from tests.event.stream import audit_events, key_id
from tests.factories import Factory, TenantFixture
from tests.fakes.paddle import FakePaddle
from tests.http_client import api_client, bearer, running_app

WRITES = [
    operation
    for operation in operations(introspection_app())
    if operation.tenant_scoped and operation.method != "GET"
]


@dataclass
class World:
    client: httpx.AsyncClient
    tenant: TenantFixture
    factory: Factory
    paddle: FakePaddle

    async def send(self, method: str, path: str, body: Any = None) -> httpx.Response:
        response = await self.client.request(
            method, self.tenant.path + path, json=body, headers=bearer(self.tenant.admin_key)
        )
        assert response.status_code < 300, f"{method} {path}: {response.text}"
        return response


@dataclass(frozen=True)
class Call:
    """The audited request, after the recipe's setup: what is sent and what it names."""

    method: str
    path: str
    body: Any = None
    status: int = 200
    name: str = ""


Recipe = Callable[[World], Awaitable[Call]]
RECEIVER = {"name": "pager", "webhook_configs": [{"url": "https://pager.example.com/hook"}]}
WINDOW = [{"weekdays": ["monday:friday"]}]


async def _cluster(world: World, name: str = "web") -> None:
    await create_cluster(world.client, world.tenant.path, world.tenant.admin_key, name)


async def _secret(world: World, name: str = "db") -> None:
    await world.send("POST", "/secrets", {"name": name, "secretPath": f"apps/{name}"})


async def _running_cluster(world: World) -> Call:
    await _cluster(world)
    await wait_running(world.client, world.tenant.path, world.tenant.admin_key, "web")
    return Call("POST", "/clusters/web/credentials", name="web")


async def _tenant_fields(world: World) -> Call:
    # The tenant's own fields are all the platform's: the write is refused, and recorded.
    return Call("PATCH", "", {"plan": "pro"}, 403, world.tenant.name)


async def _portal(world: World) -> Call:
    customer, _ = world.paddle.add_customer(subscriptions=0)
    await world.factory.billing.link(world.tenant.name, customer)
    return Call("POST", "/billing/portal-session", name=world.tenant.name)


async def _nothing(world: World) -> None:
    return None


def after(setup: Callable[[World], Awaitable[None]], call: Call) -> Recipe:
    async def recipe(world: World) -> Call:
        await setup(world)
        return call

    return recipe


def alone(call: Call) -> Recipe:
    return after(_nothing, call)


async def _receiver(world: World) -> None:
    await world.send("PUT", "/alerting/receivers/pager", RECEIVER)


async def _child_route(world: World) -> None:
    await world.send("PUT", "/alerting/routes/0", {"receiver": "default"})


async def _template(world: World) -> None:
    await world.send(
        "PUT", "/alerting/templates/a.tmpl", {"contents": '{{ define "a" }}x{{ end }}'}
    )


async def _interval(world: World) -> None:
    await world.send("PUT", "/alerting/time-intervals/office", {"time_intervals": WINDOW})


async def _member(world: World) -> None:
    await world.send("POST", "/members", {"email": "dev@example.com", "role": "readonly"})


async def _api_key(world: World) -> Call:
    created = await world.send("POST", "/apikeys", {"displayName": "ci", "role": "readonly"})
    key = created.json()["id"]
    return Call("DELETE", f"/apikeys/{key}", status=204, name=key)


# A host that never resolves: the app's reconcilers send nothing anywhere.
HOOK = {"url": "https://hooks.example.invalid/t", "events": ["*"]}


async def _webhook(world: World) -> str:
    created = await world.send("POST", "/webhooks", HOOK)
    return str(created.json()["id"])


def on_webhook(method: str, suffix: str, body: Any = None, status: int = 200) -> Recipe:
    async def recipe(world: World) -> Call:
        hook = await _webhook(world)
        return Call(method, f"/webhooks/{hook}{suffix}", body, status, hook)

    return recipe


async def _redeliver(world: World) -> Call:
    hook = await _webhook(world)
    ping = await world.send("POST", f"/webhooks/{hook}/ping")
    delivery = ping.json()["id"]
    return Call("POST", f"/webhooks/{hook}/deliveries/{delivery}/redeliver", None, 202, hook)


TENANT = "/tenants/{tenant}"
RECIPES: dict[tuple[str, str], Recipe] = {
    ("PATCH", ""): _tenant_fields,
    ("POST", "/clusters"): alone(Call("POST", "/clusters", {"name": "web"}, 201, "web")),
    ("PATCH", "/clusters/{name}"): after(
        _cluster, Call("PATCH", "/clusters/web", {"displayName": "Web"}, name="web")
    ),
    ("DELETE", "/clusters/{name}"): after(
        _cluster, Call("DELETE", "/clusters/web", status=202, name="web")
    ),
    ("POST", "/clusters/{name}/credentials"): _running_cluster,
    ("POST", "/billing/portal-session"): _portal,
    ("POST", "/secrets"): alone(
        Call("POST", "/secrets", {"name": "db", "secretPath": "apps/db"}, 201, "db")
    ),
    ("PATCH", "/secrets/{name}"): after(
        _secret, Call("PATCH", "/secrets/db", {"sync": []}, name="db")
    ),
    ("DELETE", "/secrets/{name}"): after(
        _secret, Call("DELETE", "/secrets/db", status=204, name="db")
    ),
    ("POST", "/members"): alone(
        Call(
            "POST",
            "/members",
            {"email": "dev@example.com", "role": "readonly"},
            201,
            "dev@example.com",
        )
    ),
    ("PATCH", "/members/{email}"): after(
        _member,
        Call("PATCH", "/members/dev@example.com", {"role": "admin"}, name="dev@example.com"),
    ),
    ("DELETE", "/members/{email}"): after(
        _member, Call("DELETE", "/members/dev@example.com", status=204, name="dev@example.com")
    ),
    ("POST", "/apikeys"): alone(
        Call("POST", "/apikeys", {"displayName": "ci", "role": "readonly"}, 201)
    ),
    ("DELETE", "/apikeys/{id}"): _api_key,
    ("PUT", "/alerting/config"): alone(
        Call(
            "PUT",
            "/alerting/config",
            {"receivers": [{"name": "default"}], "route": {"receiver": "default"}},
            name="config",
        )
    ),
    ("DELETE", "/alerting/config"): alone(Call("DELETE", "/alerting/config", name="config")),
    ("PUT", "/alerting/global"): alone(
        Call("PUT", "/alerting/global", {"resolve_timeout": "5m"}, name="global")
    ),
    ("PUT", "/alerting/route"): alone(
        Call("PUT", "/alerting/route", {"receiver": "default"}, name="route")
    ),
    ("PUT", "/alerting/receivers/{name}"): alone(
        Call("PUT", "/alerting/receivers/pager", RECEIVER, 201, "pager")
    ),
    ("DELETE", "/alerting/receivers/{name}"): after(
        _receiver, Call("DELETE", "/alerting/receivers/pager", status=204, name="pager")
    ),
    ("PUT", "/alerting/routes/{id}"): alone(
        Call("PUT", "/alerting/routes/0", {"receiver": "default"}, 201, "0")
    ),
    ("DELETE", "/alerting/routes/{id}"): after(
        _child_route, Call("DELETE", "/alerting/routes/0", status=204, name="0")
    ),
    ("PUT", "/alerting/templates/{filename}"): alone(
        Call(
            "PUT",
            "/alerting/templates/a.tmpl",
            {"contents": '{{ define "a" }}x{{ end }}'},
            201,
            "a.tmpl",
        )
    ),
    ("DELETE", "/alerting/templates/{filename}"): after(
        _template, Call("DELETE", "/alerting/templates/a.tmpl", status=204, name="a.tmpl")
    ),
    ("PUT", "/alerting/time-intervals/{name}"): alone(
        Call("PUT", "/alerting/time-intervals/office", {"time_intervals": WINDOW}, 201, "office")
    ),
    ("DELETE", "/alerting/time-intervals/{name}"): after(
        _interval, Call("DELETE", "/alerting/time-intervals/office", status=204, name="office")
    ),
    ("POST", "/webhooks"): alone(Call("POST", "/webhooks", HOOK, 201)),
    ("PATCH", "/webhooks/{id}"): on_webhook("PATCH", "", {"description": "ops"}),
    ("DELETE", "/webhooks/{id}"): on_webhook("DELETE", "", status=204),
    ("POST", "/webhooks/{id}/rotate-secret"): on_webhook("POST", "/rotate-secret"),
    ("POST", "/webhooks/{id}/ping"): on_webhook("POST", "/ping", status=202),
    ("POST", "/webhooks/{id}/deliveries/{delivery}/redeliver"): _redeliver,
}


@pytest.fixture
async def world(
    database: Database, database_url: str, tmp_path: Any, factory: Factory
) -> AsyncIterator[World]:
    paddle = FakePaddle().start()
    settings = make_settings(
        database_url,
        tmp_path,
        billing_provider="paddle",
        paddle_api_url=paddle.url,
        paddle_api_key=paddle.api_key,
        paddle_webhook_secret=paddle.webhook_secret,
    )
    try:
        async with running_app(settings) as app, api_client(app) as client:
            yield World(client, await factory.tenant(), factory, paddle)
    finally:
        paddle.stop()


def _template_of(operation: Operation) -> str:
    return operation.path.removeprefix("/api/v1" + TENANT)


@pytest.mark.parametrize("operation", WRITES, ids=str)
async def test_every_write_is_recorded_once(operation: Operation, world: World) -> None:
    recipe = RECIPES.get((operation.method, _template_of(operation)))
    if recipe is None:
        pytest.fail(f"{operation}: add a recipe to RECIPES (tests/event/test_audit.py)")
    call = await recipe(world)
    before = await audit_events(world.client, world.tenant)
    response = await world.client.request(
        call.method,
        world.tenant.path + call.path,
        json=call.body,
        headers=bearer(world.tenant.admin_key),
    )
    assert response.status_code == call.status, response.text
    new = (await audit_events(world.client, world.tenant))[: -len(before) or None]
    assert len(new) == 1, new
    (event,) = new
    expected = audit_action(operation.method, operation.path)
    assert expected is not None
    name = call.name or response.headers.get("Location", "").rsplit("/", 1)[-1]
    assert event["action"] == expected.action
    assert event["resource"] == {"kind": expected.kind, "name": name}
    assert event["actor"] == {
        "kind": "apikey",
        "id": await key_id(world.client, world.tenant, "admin"),
    }
    assert event["status"] == call.status
    assert event["requestId"] == response.headers["X-Request-Id"]
    assert event["sourceIp"]
    assert event["type"] == "audit"
    assert event["time"].endswith("Z")
    if etag := response.headers.get("ETag"):
        assert event["resourceVersion"]["after"] == etag.strip('"')


def test_every_recipe_names_a_write() -> None:
    """A recipe left behind by a removed route is noticed."""
    served = {(operation.method, _template_of(operation)) for operation in WRITES}
    assert set(RECIPES) <= served, sorted(set(RECIPES) - served)
