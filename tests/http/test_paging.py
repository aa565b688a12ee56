"""Lists that page (http/paging.py): every list but invoices takes ``limit`` and ``continue``.
A walk answers the same items as the whole list, in its order, each once, even when items
are created or deleted between pages; bad parameters are 400 naming the parameter."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.cluster.polling import gone, poll
from tests.factories import Factory, TenantFixture
from tests.http_client import bearer

Make = Callable[[httpx.AsyncClient, Factory, TenantFixture, str], Awaitable[None]]
Remove = Callable[[httpx.AsyncClient, TenantFixture, str], Awaitable[None]]


async def _ok(response: httpx.Response) -> None:
    assert response.status_code < 300, response.text


async def _make_cluster(_: httpx.AsyncClient, f: Factory, t: TenantFixture, name: str) -> None:
    await f.cluster_row(t.id, name)


async def _remove_cluster(client: httpx.AsyncClient, tenant: TenantFixture, name: str) -> None:
    # Asked to go (202), a cluster stays listed until the reconciler has removed it: waited
    # for here, so that it is gone before the walk goes on (on a slow run it was still
    # listed, Terminating, when its page came).
    path = f"{tenant.path}/clusters/{name}"
    await _ok(await client.delete(path, headers=_admin(tenant)))
    await poll(client, path, _admin(tenant), gone, f"cluster {name} gone")


async def _make_secret(client: httpx.AsyncClient, _: Factory, t: TenantFixture, name: str) -> None:
    body = {"name": name, "secretPath": f"apps/{name}", "sync": []}
    await _ok(await client.post(f"{t.path}/secrets", json=body, headers=_admin(t)))


async def _remove_secret(client: httpx.AsyncClient, tenant: TenantFixture, name: str) -> None:
    await _ok(await client.delete(f"{tenant.path}/secrets/{name}", headers=_admin(tenant)))


async def _make_member(_: httpx.AsyncClient, f: Factory, t: TenantFixture, name: str) -> None:
    await f.member(t.id, f"{name}@example.com")


async def _remove_member(client: httpx.AsyncClient, tenant: TenantFixture, name: str) -> None:
    path = f"{tenant.path}/members/{name}"
    await _ok(await client.delete(path, headers=_admin(tenant)))


def _alerting_put(part: str, body: Callable[[str], dict[str, Any]], suffix: str = "") -> Make:
    """Makes an item of an alerting collection by PUT, named as the walk names it."""

    async def make(client: httpx.AsyncClient, _: Factory, t: TenantFixture, name: str) -> None:
        path = f"{t.path}/alerting/{part}/{name}{suffix}"
        await _ok(await client.put(path, json=body(name), headers=_admin(t)))

    return make


_make_receiver = _alerting_put(
    "receivers",
    lambda name: {"name": name, "webhook_configs": [{"url": "https://hooks.example.com/a"}]},
)
_make_template = _alerting_put(
    "templates", lambda _: {"contents": '{{ define "x" }}x{{ end }}'}, ".tmpl"
)
_make_interval = _alerting_put(
    "time-intervals", lambda _: {"time_intervals": [{"weekdays": ["monday"]}]}
)


async def _remove_receiver(client: httpx.AsyncClient, tenant: TenantFixture, name: str) -> None:
    path = f"{tenant.path}/alerting/receivers/{name}"
    await _ok(await client.delete(path, headers=_admin(tenant)))


@dataclass(frozen=True)
class Listing:
    path: str  # under the tenant
    identity: str  # the item's field that names it
    make: Make
    remove: Remove | None = None


LISTINGS = {
    "clusters": Listing("clusters", "name", _make_cluster, _remove_cluster),
    "secrets": Listing("secrets", "name", _make_secret, _remove_secret),
    "members": Listing("members", "email", _make_member, _remove_member),
    "receivers": Listing("alerting/receivers", "name", _make_receiver, _remove_receiver),
    "templates": Listing("alerting/templates", "filename", _make_template),
    "time-intervals": Listing("alerting/time-intervals", "name", _make_interval),
}


def _admin(tenant: TenantFixture) -> dict[str, str]:
    return bearer(tenant.admin_key)


async def _get(
    client: httpx.AsyncClient, tenant: TenantFixture, path: str, **params: Any
) -> dict[str, Any]:
    response = await client.get(f"{tenant.path}/{path}", params=params, headers=_admin(tenant))
    assert response.status_code == 200, response.text
    document: dict[str, Any] = response.json()
    return document


def _names(document: dict[str, Any], identity: str) -> list[str]:
    return [str(item[identity]) for item in document["items"]]


async def _walk(
    client: httpx.AsyncClient,
    tenant: TenantFixture,
    listing: Listing,
    limit: int,
    between: Callable[[int], Awaitable[None]] | None = None,
) -> list[str]:
    """Every page of the list, ``between(n)`` run after the n-th; the names in order."""
    names: list[str] = []
    document = await _get(client, tenant, listing.path, limit=limit)
    pages = 1
    while True:
        assert len(document["items"]) <= limit
        names += _names(document, listing.identity)
        if "continue" not in document:
            return names
        assert document["items"], "a page with more to come is never empty"
        if between is not None:
            await between(pages)
        document = await _get(
            client, tenant, listing.path, limit=limit, **{"continue": document["continue"]}
        )
        pages += 1


@pytest.mark.parametrize("name", sorted(LISTINGS))
async def test_a_walk_answers_the_whole_list_in_order_once(
    client: httpx.AsyncClient, factory: Factory, name: str
) -> None:
    listing = LISTINGS[name]
    tenant = await factory.tenant()
    for index in range(7):
        await listing.make(client, factory, tenant, f"p{index}-{uuid.uuid4().hex[:4]}")
    whole = await _get(client, tenant, listing.path)
    assert "continue" not in whole  # without limit: everything, as before paging existed
    expected = _names(whole, listing.identity)
    for limit in (1, 3, len(expected), len(expected) + 5):
        assert await _walk(client, tenant, listing, limit) == expected, limit
    last = await _get(client, tenant, listing.path, limit=len(expected))
    assert "continue" not in last  # a page that ends the list says so by leaving it out


@pytest.mark.parametrize("name", [name for name, one in LISTINGS.items() if one.remove])
async def test_items_there_throughout_a_walk_are_answered_once_whatever_changes(
    client: httpx.AsyncClient, factory: Factory, name: str
) -> None:
    listing = LISTINGS[name]
    remove = listing.remove
    assert remove is not None
    tenant = await factory.tenant()
    for index in range(9):
        await listing.make(client, factory, tenant, f"q{index}")
    before = _names(await _get(client, tenant, listing.path), listing.identity)
    # The tenant's own (its admin member, its default receiver) come first.
    made = [item for item in before if item.startswith("q")]
    removed: list[str] = []

    async def change(page: int) -> None:
        # After the first two pages: one item already answered and one still to come go
        # (after the first), two new ones come (one each side of the cursor where the order
        # is by name; both after it where it is by creation).
        if page > 2:
            return
        gone = [made[0], made[-1]] if page == 1 else []
        for item in gone:
            await remove(client, tenant, item)
        removed.extend(gone)
        await listing.make(client, factory, tenant, f"r{page}a")
        await listing.make(client, factory, tenant, f"a{page}r")

    # Pages of three: q0 is answered on the first page, never its last item (which a list in
    # stored order needs to go on: see the next test).
    walked = await _walk(client, tenant, listing, 3, change)
    throughout = [item for item in before if item not in removed]
    assert [item for item in walked if item in throughout] == throughout
    assert len(walked) == len(set(walked))
    assert made[-1] not in walked  # deleted before its page came


async def test_a_stored_order_list_whose_last_answered_item_went_says_so(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    listing = LISTINGS["receivers"]
    tenant = await factory.tenant()
    for index in range(4):
        await listing.make(client, factory, tenant, f"s{index}")
    first = await _get(client, tenant, listing.path, limit=2)
    await _remove_receiver(client, tenant, first["items"][-1]["name"])
    response = await client.get(
        f"{tenant.path}/{listing.path}",
        params={"limit": 2, "continue": first["continue"]},
        headers=_admin(tenant),
    )
    assert response.status_code == 410, response.text
    assert response.json()["code"] == "CONTINUE_EXPIRED"
    assert response.json()["field"] == "continue"


async def test_routes_page_within_one_version_of_the_configuration(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await _make_receiver(client, factory, tenant, "ops")
    for index in range(3):
        route = {"receiver": "ops", "matchers": [f'team="t{index}"']}
        path = f"{tenant.path}/alerting/routes/{index}"
        await _ok(await client.put(path, json=route, headers=_admin(tenant)))
    first = await _get(client, tenant, "alerting/routes", limit=2)
    rest = await _get(client, tenant, "alerting/routes", limit=2, **{"continue": first["continue"]})
    assert [r["matchers"] for r in first["items"] + rest["items"]] == [
        [f'team="t{index}"'] for index in range(3)
    ]
    # Routes are named by position: once the routes change, positions name other routes.
    await _ok(await client.delete(f"{tenant.path}/alerting/routes/0", headers=_admin(tenant)))
    stale = await client.get(
        f"{tenant.path}/alerting/routes",
        params={"limit": 2, "continue": first["continue"]},
        headers=_admin(tenant),
    )
    assert stale.status_code == 410, stale.text


async def test_api_keys_page_by_creation(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    for index in range(5):
        await factory.api_key(tenant.id, display_name=f"k{index}")
    listing = Listing("apikeys", "id", _make_cluster)
    whole = _names(await _get(client, tenant, "apikeys"), "id")
    assert len(whole) == 7  # the tenant's two and five more

    async def more(page: int) -> None:
        if page <= 2:
            await factory.api_key(tenant.id, display_name=f"later{page}")

    walked = await _walk(client, tenant, listing, 2, more)
    assert walked[: len(whole)] == whole
    assert len(walked) == len(set(walked)) > len(whole)


@pytest.mark.parametrize("path", ["/plans", "/versions"])
async def test_the_catalogues_page_too(
    client: httpx.AsyncClient, factory: Factory, path: str
) -> None:
    tenant = await factory.tenant()
    headers = _admin(tenant)
    whole = (await client.get(path, headers=headers)).json()
    identity = "name" if path == "/plans" else "version"
    names: list[str] = []
    params: dict[str, Any] = {"limit": 1}
    while True:
        page = (await client.get(path, params=params, headers=headers)).json()
        names += [item[identity] for item in page["items"]]
        if "continue" not in page:
            break
        params["continue"] = page["continue"]
    assert names == [item[identity] for item in whole["items"]]
    assert len(names) >= 2


async def test_invoices_do_not_page(client: httpx.AsyncClient, factory: Factory) -> None:
    """The spec: the full invoice history, no pagination (a limit is no parameter of it)."""
    tenant = await factory.tenant()
    response = await client.get(
        f"{tenant.path}/invoices", params={"limit": 1}, headers=_admin(tenant)
    )
    assert response.status_code == 200, response.text
    assert "continue" not in response.json()


@pytest.mark.parametrize("limit", ["0", "1001", "-1", "x", "1.5", ""])
async def test_a_limit_out_of_range_is_400(
    client: httpx.AsyncClient, factory: Factory, limit: str
) -> None:
    tenant = await factory.tenant()
    response = await client.get(
        f"{tenant.path}/secrets", params={"limit": limit}, headers=_admin(tenant)
    )
    assert response.status_code == 400, response.text
    assert response.json()["field"] == "limit"


async def test_a_continue_token_not_for_this_list_is_400_and_reveals_nothing(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant, other = await factory.tenant(), await factory.tenant()
    for index in range(3):
        await _make_secret(client, factory, tenant, f"x{index}")
        await _make_secret(client, factory, other, f"y{index}")
        await _make_member(client, factory, tenant, f"m{index}")
    token = (await _get(client, tenant, "secrets", limit=1))["continue"]
    members_token = (await _get(client, tenant, "members", limit=1))["continue"]
    body, _, signature = token.partition(".")
    tampered = f"{body}.{'A' if signature[0] != 'A' else 'B'}{signature[1:]}"
    refused = {
        "garbage": (tenant, "secrets", "not-a-token"),
        "tampered": (tenant, "secrets", tampered),
        "unsigned": (tenant, "secrets", body),
        "another tenant's": (other, "secrets", token),
        "another list's": (tenant, "secrets", members_token),
        "too long": (tenant, "secrets", token + "A" * 3000),
    }
    for why, (whose, path, presented) in refused.items():
        response = await client.get(
            f"{whose.path}/{path}", params={"continue": presented}, headers=_admin(whose)
        )
        assert response.status_code == 400, (why, response.text)
        assert response.json()["field"] == "continue", why
        assert "items" not in response.json(), why
