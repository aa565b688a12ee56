"""Hostile alerting inputs: each refused with a 400 in the envelope, nothing stored, and
the configuration still readable afterwards (on both databases)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tenantplane.alerting.validation.gotemplate import MAX_TEMPLATE_BYTES, MAX_TEMPLATE_NESTING
from tenantplane.alerting.validation.limits import MAX_ROUTE_DEPTH
from tests.alerting.test_config_api import get, put
from tests.factories import Factory, TenantFixture
from tests.http_client import bearer

WEBHOOK = {"webhook_configs": [{"url": "https://hooks.example.com/alerts"}]}


def nested(levels: int) -> dict[str, Any]:
    """A route with ``levels`` levels of child routes below it."""
    route: dict[str, Any] = {"receiver": "default"}
    for _ in range(levels):
        route = {"receiver": "default", "routes": [route]}
    return route


def wrapper(**sections: Any) -> dict[str, Any]:
    return {"receivers": [{"name": "default"}], "route": {"receiver": "default"}, **sections}


async def assert_refused(
    client: httpx.AsyncClient,
    tenant: TenantFixture,
    path: str,
    body: Any,
    code: str,
    field: str | None,
) -> None:
    """400 with the code and field, the ETag unchanged and every read still answering."""
    before = await get(client, tenant, "config")
    response = await put(client, tenant, path, body)
    assert response.status_code == 400, (path, response.text)
    assert response.json()["code"] == code, response.json()
    assert response.json().get("field") == field, response.json()
    for read in ("config", "route", "routes", "receivers", "templates", "time-intervals"):
        after = await get(client, tenant, read)
        assert after.status_code == 200, (read, after.text)
    after = await get(client, tenant, "config")
    assert after.headers["ETag"] == before.headers["ETag"]
    assert after.json() == before.json()


async def test_child_routes_deeper_than_the_limit_are_refused_on_every_write_path(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    too_deep = "route" + ".routes[0]" * MAX_ROUTE_DEPTH + ".routes"
    await assert_refused(
        client,
        tenant,
        "config",
        wrapper(route=nested(MAX_ROUTE_DEPTH + 1)),
        "ROUTE_TOO_DEEP",
        too_deep,
    )
    await assert_refused(
        client, tenant, "route", nested(MAX_ROUTE_DEPTH + 1), "ROUTE_TOO_DEEP", too_deep[6:]
    )
    await assert_refused(
        client, tenant, "routes/0", nested(MAX_ROUTE_DEPTH), "ROUTE_TOO_DEEP", too_deep[16:]
    )
    # Far deeper than anything recursive could take: the body guard refuses it before parsing.
    await assert_refused(client, tenant, "route", nested(300), "BODY_TOO_DEEP", None)


async def test_child_routes_at_the_limit_are_stored_and_read_back(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    assert (await put(client, tenant, "routes/0", nested(MAX_ROUTE_DEPTH - 1))).status_code == 201
    for read in ("config", "route", "routes", "routes/0"):
        assert (await get(client, tenant, read)).status_code == 200, read
    assert (await get(client, tenant, "routes/0")).json() == nested(MAX_ROUTE_DEPTH - 1)


@pytest.mark.parametrize("shape", ["parentheses", "blocks"])
async def test_deeply_nested_templates_are_refused_on_every_write_path(
    client: httpx.AsyncClient, factory: Factory, shape: str
) -> None:
    tenant = await factory.tenant()
    if shape == "parentheses":
        contents = "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}"
    else:
        contents = "{{ if 1 }}" * (MAX_TEMPLATE_NESTING + 1) + "{{ end }}" * (
            MAX_TEMPLATE_NESTING + 1
        )
    await assert_refused(
        client,
        tenant,
        "templates/deep.tmpl",
        {"contents": contents},
        "TEMPLATE_TOO_DEEP",
        "contents",
    )
    await assert_refused(
        client,
        tenant,
        "config",
        wrapper(templates={"deep.tmpl": contents}),
        "TEMPLATE_TOO_DEEP",
        "templates.deep.tmpl",
    )


async def test_templates_at_the_nesting_limit_are_accepted(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    depth = MAX_TEMPLATE_NESTING
    contents = "{{ " + "(" * depth + "1" + ")" * depth + " }}"
    assert (
        await put(client, tenant, "templates/a.tmpl", {"contents": contents})
    ).status_code == 201


async def test_templates_over_the_size_limit_are_refused_on_every_write_path(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    contents = "é" * (MAX_TEMPLATE_BYTES // 2 + 1)  # under the limit in characters, over in bytes
    await assert_refused(
        client,
        tenant,
        "templates/big.tmpl",
        {"contents": contents},
        "TEMPLATE_TOO_LARGE",
        "contents",
    )
    await assert_refused(
        client,
        tenant,
        "config",
        wrapper(templates={"big.tmpl": contents}),
        "TEMPLATE_TOO_LARGE",
        "templates.big.tmpl",
    )


UNADDRESSABLE = ["a/b", "a%b", "a?b", "a#b", "a\\b", ".", "..", "x" * 201, "tab\there"]


async def test_names_that_cannot_be_a_path_segment_are_refused_in_the_wrapper(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    for name in UNADDRESSABLE:
        receivers = [{"name": "default"}, {"name": name, **WEBHOOK}]
        await assert_refused(
            client,
            tenant,
            "config",
            wrapper(receivers=receivers),
            "INVALID_NAME",
            "receivers[1].name",
        )
        await assert_refused(
            client,
            tenant,
            "config",
            wrapper(time_intervals=[{"name": name, "time_intervals": []}]),
            "INVALID_NAME",
            "time_intervals[0].name",
        )
        await assert_refused(
            client,
            tenant,
            "config",
            wrapper(templates={name: "x"}),
            "INVALID_NAME",
            f"templates.{name}",
        )


async def test_item_paths_use_the_same_name_rule(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    # Characters a client can still put in one segment (percent-encoded) are refused by the
    # same rule as in the wrapper; a raw "/" never reaches the item route at all.
    for encoded in ("a%25b", "a%3Fb", "a%23b", "a%5Cb"):
        await assert_refused(
            client, tenant, f"receivers/{encoded}", WEBHOOK, "INVALID_NAME", "name"
        )
        await assert_refused(
            client,
            tenant,
            f"time-intervals/{encoded}",
            {"time_intervals": []},
            "INVALID_NAME",
            "name",
        )
    # A name the rule allows is addressable by its own path after a wrapper write.
    name = "team ops: pager (EU)"
    written = await put(
        client,
        tenant,
        "config",
        wrapper(receivers=[{"name": "default"}, {"name": name, **WEBHOOK}]),
    )
    assert written.status_code == 200, written.text
    one = await get(client, tenant, f"receivers/{name}")
    assert one.status_code == 200
    assert one.json()["name"] == name


async def test_nul_characters_and_huge_numbers_do_not_break_storage(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await assert_refused(
        client,
        tenant,
        "receivers/x",
        {"webhook_configs": [{"url": "https://a/", "max_alerts": 2**64}]},
        "NUMBER_OUT_OF_RANGE",
        "webhook_configs[0].max_alerts",
    )
    await assert_refused(
        client,
        tenant,
        "receivers/x",
        {"telegram_configs": [{"bot_token": "t", "chat_id": 2**63}]},
        "NUMBER_OUT_OF_RANGE",
        "telegram_configs[0].chat_id",
    )


async def test_huge_numbers_in_time_intervals_are_refused_as_go_would(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    for field in ("days_of_month", "years", "months"):
        await assert_refused(
            client,
            tenant,
            "time-intervals/w",
            {"time_intervals": [{field: ["1:" + "9" * 5000]}]},
            "INVALID_TIME_INTERVAL",
            f"time_intervals[0].{field}[0]",
        )
    response = await put(
        client, tenant, "time-intervals/w", {"time_intervals": [{"years": ["1:" + "9" * 30]}]}
    )
    assert "value out of range" in response.json()["message"]


async def test_bodies_that_are_not_json_objects_are_refused(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    headers = {**bearer(tenant.admin_key), "Content-Type": "application/json"}
    for path in ("config", "route", "routes/0", "global", "receivers/x"):
        before = await get(client, tenant, "config")
        malformed = await client.put(
            f"{tenant.path}/alerting/{path}", content=b'{"receiver": ', headers=headers
        )
        assert malformed.status_code == 400, path
        assert malformed.json()["code"] == "MALFORMED_JSON", path
        await assert_refused(client, tenant, path, ["receiver"], "VALIDATION_FAILED", None)
        after = await get(client, tenant, "config")
        assert after.headers["ETag"] == before.headers["ETag"]
