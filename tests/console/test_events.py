"""The events page: the tenant's audit and platform events in a table, filtered by a GET form
whose values the API checks (its 400 shown at the field it names), paged with the API's
``continue`` token carried by a "Next page" link."""

from __future__ import annotations

import html
import re

import httpx
from fastapi import FastAPI

from tenantplane.member.models import Role
from tests.cluster.polling import wait_running
from tests.console.session import console_session
from tests.event.stream import key_id
from tests.factories import Factory, TenantFixture
from tests.http_client import bearer

ROW = re.compile(r'<tr data-event="([^"]+)">(.*?)</tr>', re.S)
NEXT = re.compile(r'<a href="([^"]+)" rel="next">Next page</a>')


def rows(page: httpx.Response) -> list[tuple[str, str]]:
    return ROW.findall(page.text)


def field_error(page: httpx.Response, field: str) -> str | None:
    found = re.search(rf'<p class="field-error" id="f-{field}-error">([^<]+)</p>', page.text)
    return html.unescape(found.group(1)) if found else None


async def three_audit_events(client: httpx.AsyncClient, tenant: TenantFixture) -> None:
    """Two clusters created with the admin key, then a delete refused to the readonly key."""
    for name in ("one", "two"):
        created = await client.post(
            f"{tenant.path}/clusters", json={"name": name}, headers=bearer(tenant.admin_key)
        )
        assert created.status_code == 201
    refused = await client.delete(
        f"{tenant.path}/clusters/one", headers=bearer(tenant.readonly_key)
    )
    assert refused.status_code == 403


async def test_the_table_shows_audit_events_newest_first(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await factory.member(tenant.id, "viewer@example.com", Role.readonly)
    async with console_session(app, tenant.name, "viewer@example.com") as console:
        empty = await console.get("events?type=audit")
        assert empty.status_code == 200
        assert "No event matches these filters." in empty.text

        await three_audit_events(client, tenant)
        page = await console.get("events?type=audit")
    assert page.status_code == 200
    found = rows(page)
    assert len(found) == 3
    admin, readonly = (
        await key_id(client, tenant, "admin"),
        await key_id(client, tenant, "readonly"),
    )
    newest, _, oldest = (cells for _, cells in found)
    assert "<code>cluster.delete</code>" in newest
    assert "cluster/one" in newest
    assert f"API key {readonly}" in newest
    assert "<td>403</td>" in newest
    assert "<code>cluster.create</code>" in oldest
    assert f"API key {admin}" in oldest
    assert "<td>201</td>" in oldest
    shown_time = r'<time datetime="[^"]+Z">\d{4}-\d\d-\d\d<br>\d\d:\d\d:\d\d UTC</time>'
    assert re.search(shown_time, oldest)
    # The filter is kept in the form.
    assert '<option value="audit" selected>' in page.text
    assert 'aria-current="page"' in page.text


async def test_filters_reach_the_api_and_platform_events_show_their_data(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await three_audit_events(client, tenant)
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        created = await console.get("events?action=cluster.create&name=two")
        [(_, cells)] = rows(created)
        assert "cluster/two" in cells
        assert 'id="f-name" name="name" type="text" value="two"' in created.text

        prefixed = await console.get("events?type=audit&action=cluster.*&kind=cluster")
        assert len(rows(prefixed)) == 3

        refused = await console.get("events?type=audit&actor=nobody@example.com")
        assert rows(refused) == []
        assert "No event matches these filters." in refused.text

        # The reconciler's phase changes: platform events with from → to, by the platform.
        await wait_running(client, tenant.path, tenant.admin_key, "one")
        changes = await console.get("events?type=platform&action=cluster.phase_changed&name=one")
        shown = [cells for _, cells in rows(changes)]
        assert any("Provisioning → Running" in cells for cells in shown)
        assert any("Pending → Provisioning" in cells for cells in shown)
        assert all("<td>platform</td>" in cells and "<td>—</td>" in cells for cells in shown)


async def test_a_next_page_link_carries_the_filters_and_the_continue_token(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await three_audit_events(client, tenant)
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        seen: list[str] = []
        page = await console.get("events?type=audit&limit=2")
        assert "Newest events" not in page.text
        while True:
            seen.extend(event_id for event_id, _ in rows(page))
            link = NEXT.search(page.text)
            if link is None:
                break
            href = html.unescape(link.group(1))
            assert href.startswith(console.url("events?"))
            assert "type=audit" in href
            assert "limit=2" in href
            assert "continue=" in href
            page = await console.http.get(href)
            assert page.status_code == 200
            assert "Newest events" in page.text
    assert len(seen) == 3
    assert len(set(seen)) == 3


async def test_a_filter_the_api_refuses_is_shown_at_its_field(
    app: FastAPI, factory: Factory
) -> None:
    tenant = await factory.tenant()
    async with console_session(app, tenant.name, tenant.admin_email) as console:
        action = await console.get("events?action=Not%20an%20action")
        assert action.status_code == 400
        message = field_error(action, "action")
        assert message is not None
        assert "pattern" in message
        assert not message.startswith("invalid query parameter")
        assert 'id="f-action" name="action" type="text" value="Not an action"' in action.text
        assert 'aria-invalid="true"' in action.text
        assert "data-event" not in action.text

        since = await console.get("events?since=yesterday")
        assert since.status_code == 400
        assert "RFC 3339" in (field_error(since, "since") or "")

        limit = await console.get("events?limit=5000")
        assert limit.status_code == 400
        assert field_error(limit, "limit") is not None

        kind = await console.get("events?type=everything")
        assert kind.status_code == 400
        assert field_error(kind, "type") is not None

        token = await console.get("events?continue=not-a-token")
        assert token.status_code == 400
        assert 'class="error" role="alert">continue:' in token.text
