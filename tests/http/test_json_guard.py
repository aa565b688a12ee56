"""Hostile JSON bodies: refused in the envelope before any route sees them, nothing stored."""

from __future__ import annotations

import httpx
import pytest

from tenantplane.http.json_guard import MAX_DEPTH
from tests.factories import Factory, TenantFixture
from tests.http_client import bearer


def with_alerts(alerts: str) -> bytes:
    return ('{"name": "hostile", "alerts": {"a": ' + alerts + "}}").encode()


async def post_raw(
    client: httpx.AsyncClient, tenant: TenantFixture, body: bytes, path: str = "/clusters"
) -> httpx.Response:
    headers = {**bearer(tenant.admin_key), "Content-Type": "application/json"}
    return await client.post(f"{tenant.path}{path}", content=body, headers=headers)


async def assert_nothing_stored(client: httpx.AsyncClient, tenant: TenantFixture) -> None:
    listed = await client.get(f"{tenant.path}/clusters", headers=bearer(tenant.admin_key))
    assert listed.status_code == 200  # the server still answers
    assert listed.json()["items"] == []


def deep_alerts(levels: int) -> bytes:
    """A body whose ``alerts`` value makes the whole body ``levels`` deep."""
    inner = levels - 2  # the body object and the alerts object
    return with_alerts("[" * inner + "]" * inner)


async def test_nesting_up_to_the_limit_is_accepted(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    response = await post_raw(client, tenant, deep_alerts(MAX_DEPTH))
    assert response.status_code == 201, response.text


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 255, 100_000])
async def test_nesting_beyond_the_limit_is_400(
    client: httpx.AsyncClient, factory: Factory, levels: int
) -> None:
    tenant = await factory.tenant()
    response = await post_raw(client, tenant, deep_alerts(levels))
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "BODY_TOO_DEEP"
    await assert_nothing_stored(client, tenant)


async def test_deep_objects_in_the_alerting_configuration_are_400(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    body = '{"webhook_configs": [{"url": "http://x.example", "x": ' + '{"a":' * 255
    body += "1" + "}" * 255 + "}]}"
    headers = {**bearer(tenant.admin_key), "Content-Type": "application/json"}
    response = await client.put(
        f"{tenant.path}/alerting/receivers/deep", content=body.encode(), headers=headers
    )
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "BODY_TOO_DEEP"


async def test_brackets_inside_strings_do_not_count_as_nesting(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    text = '"' + "[{" * 500 + '\\"' + "}]" * 3 + '"'
    response = await post_raw(client, tenant, with_alerts(text))
    assert response.status_code == 201, response.text


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (with_alerts('"\\ud800"'), "alerts.a"),
        (with_alerts('["ok", "x\\udfffy"]'), "alerts.a[1]"),
        (b'{"name": "hostile", "alerts": {"\\udc00": 1}}', "alerts"),
        (b'{"displayName": "\\ud83d", "role": "admin"}', "displayName"),
    ],
)
async def test_lone_surrogates_are_400(
    client: httpx.AsyncClient, factory: Factory, body: bytes, field: str
) -> None:
    tenant = await factory.tenant()
    path = "/apikeys" if b"displayName" in body else "/clusters"
    response = await post_raw(client, tenant, body, path)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "INVALID_UNICODE"
    assert response.json()["field"] == field
    await assert_nothing_stored(client, tenant)
    keys = await client.get(f"{tenant.path}/apikeys", headers=bearer(tenant.admin_key))
    assert len(keys.json()["items"]) == 2  # the factory's two


async def test_a_surrogate_pair_is_a_character_and_accepted(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    response = await post_raw(client, tenant, with_alerts('"\\ud83d\\ude00"'))
    assert response.status_code == 201, response.text
    assert response.json()["alerts"] == {"a": "\U0001f600"}


@pytest.mark.parametrize(
    ("literal", "code"),
    [
        ("NaN", "INVALID_NUMBER"),
        ("Infinity", "INVALID_NUMBER"),
        ("-Infinity", "INVALID_NUMBER"),
        ("1e999", "NUMBER_OUT_OF_RANGE"),
        ("-1e999", "NUMBER_OUT_OF_RANGE"),
        ("9223372036854775808", "NUMBER_OUT_OF_RANGE"),
        ("-9223372036854775809", "NUMBER_OUT_OF_RANGE"),
        ("1" * 5000, "NUMBER_OUT_OF_RANGE"),
    ],
)
async def test_numbers_json_cannot_carry_are_400(
    client: httpx.AsyncClient, factory: Factory, literal: str, code: str
) -> None:
    tenant = await factory.tenant()
    response = await post_raw(client, tenant, with_alerts(f'{{"n": [{literal}]}}'))
    assert response.status_code == 400, response.text
    assert response.json()["code"] == code
    assert response.json()["field"] == "alerts.a.n[0]"
    await assert_nothing_stored(client, tenant)


async def test_numbers_at_the_edges_of_the_ranges_are_accepted(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    body = with_alerts("[9223372036854775807, -9223372036854775808, 1.7976931348623157e308]")
    response = await post_raw(client, tenant, body)
    assert response.status_code == 201, response.text
    assert response.json()["alerts"]["a"][:2] == [2**63 - 1, -(2**63)]


@pytest.mark.parametrize(
    "body",
    [
        '{"name": "hostile", "alerts": {"a": "caf\xe9"}}'.encode("latin-1"),
        '{"name": "hostile"}'.encode("utf-16"),
        '{"name": "hostile"}'.encode("utf-32"),
        b'{"name": "hostile", "alerts": {"a": "\xed\xa0\x80"}}',  # a surrogate in UTF-8 form
    ],
)
async def test_bodies_not_in_utf8_are_400(
    client: httpx.AsyncClient, factory: Factory, body: bytes
) -> None:
    tenant = await factory.tenant()
    response = await post_raw(client, tenant, body)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "BODY_NOT_UTF8"
    await assert_nothing_stored(client, tenant)


async def test_a_non_json_content_type_is_refused_before_the_body_is_read(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    response = await client.post(
        f"{tenant.path}/clusters",
        content=b'{"name": "hostile"}',
        headers={**bearer(tenant.admin_key), "Content-Type": "text/plain"},
    )
    assert response.status_code == 415
    assert response.json()["code"] == "UNSUPPORTED_MEDIA_TYPE"
    await assert_nothing_stored(client, tenant)
