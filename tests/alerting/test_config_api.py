"""The alerting configuration API over HTTP with the default (database) backend."""

from __future__ import annotations

from typing import Any

import httpx

from tests.factories import Factory, TenantFixture
from tests.http_client import bearer

WEBHOOK = {"name": "ops", "webhook_configs": [{"url": "https://hooks.example.com/alerts"}]}


async def put(
    client: httpx.AsyncClient,
    tenant: TenantFixture,
    path: str,
    body: Any,
    *,
    if_match: str | None = None,
    key: str | None = None,
) -> httpx.Response:
    headers = bearer(key or tenant.admin_key)
    if if_match is not None:
        headers["If-Match"] = if_match
    return await client.put(f"{tenant.path}/alerting/{path}", json=body, headers=headers)


async def get(
    client: httpx.AsyncClient, tenant: TenantFixture, path: str, *, key: str | None = None
) -> httpx.Response:
    headers = bearer(key or tenant.readonly_key)
    return await client.get(f"{tenant.path}/alerting/{path}", headers=headers)


async def test_a_new_tenant_reads_the_default_configuration(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    response = await get(client, tenant, "config")
    assert response.status_code == 200
    assert response.headers["ETag"] == '"1"'
    assert response.json() == {
        "global": {},
        "receivers": [{"name": "default"}],
        "route": {"receiver": "default"},
        "templates": {},
        "time_intervals": [],
    }


async def test_receiver_upsert_path_name_wins_and_bumps_the_wrapper_etag(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    created = await put(client, tenant, "receivers/ops", {**WEBHOOK, "name": "other"})
    assert created.status_code == 201, created.text
    assert created.json()["name"] == "ops"
    assert created.headers["ETag"] == '"2"'

    same = await put(client, tenant, "receivers/ops", WEBHOOK, if_match='"2"')
    assert same.status_code == 200
    assert same.headers["ETag"] == '"2"'  # nothing changed, same version

    changed = await put(
        client, tenant, "receivers/ops", {"webhook_configs": [{"url": "https://b.example.com/"}]}
    )
    assert changed.status_code == 200
    assert changed.headers["ETag"] == '"3"'

    listed = await get(client, tenant, "receivers")
    assert listed.headers["ETag"] == '"3"'
    assert [item["name"] for item in listed.json()["items"]] == ["default", "ops"]
    one = await get(client, tenant, "receivers/ops", key=tenant.admin_key)
    assert one.json() == {"name": "ops", "webhook_configs": [{"url": "https://b.example.com/"}]}
    redacted = await get(client, tenant, "receivers/ops")  # webhook URLs carry tokens
    assert redacted.json() == {"name": "ops", "webhook_configs": [{"url": "<secret>"}]}
    missing = await get(client, tenant, "receivers/nope")
    assert missing.status_code == 404


async def test_readers_are_members_and_writers_are_admins(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    other = await factory.tenant()
    denied = await put(client, tenant, "receivers/ops", WEBHOOK, key=tenant.readonly_key)
    assert denied.status_code == 403
    for path in ("config", "receivers", "routes", "global", "templates", "time-intervals", "route"):
        response = await get(client, tenant, path)
        assert response.status_code == 200, path
        stranger = await client.get(
            f"{tenant.path}/alerting/{path}", headers=bearer(other.admin_key)
        )
        assert stranger.status_code == 403, path
    anonymous = await client.get(f"{tenant.path}/alerting/config")
    assert anonymous.status_code == 401


async def test_stale_if_match_is_refused_and_changes_nothing(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    assert (await put(client, tenant, "receivers/ops", WEBHOOK, if_match='"1"')).status_code == 201
    stale = await put(client, tenant, "receivers/dev", {"name": "dev"}, if_match='"1"')
    assert stale.status_code == 412
    assert stale.json()["code"] == "PRECONDITION_FAILED"
    config = await get(client, tenant, "config")
    assert config.headers["ETag"] == '"2"'
    assert [r["name"] for r in config.json()["receivers"]] == ["default", "ops"]


async def test_routes_insert_replace_append_and_reject_beyond_the_count(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await put(client, tenant, "receivers/ops", WEBHOOK)
    first = {"receiver": "ops", "matchers": ['severity="critical"'], "group_wait": "10s"}
    appended = await put(client, tenant, "routes/0", first)
    assert appended.status_code == 201
    assert appended.json() == first
    second = {"receiver": "default", "match": {"team": "db"}, "continue": True}
    assert (await put(client, tenant, "routes/1", second)).status_code == 201
    beyond = await put(client, tenant, "routes/3", second)
    assert beyond.status_code == 400
    assert beyond.json()["code"] == "ROUTE_INDEX_OUT_OF_RANGE"
    replaced = await put(client, tenant, "routes/0", {**first, "group_wait": "30s"})
    assert replaced.status_code == 200
    routes = await get(client, tenant, "routes")
    assert routes.json()["items"] == [{**first, "group_wait": "30s"}, second]
    assert (await get(client, tenant, "routes/1")).json() == second
    assert (await get(client, tenant, "routes/2")).status_code == 404
    bad_id = await get(client, tenant, "routes/first")
    assert bad_id.status_code == 400

    deleted = await client.delete(
        f"{tenant.path}/alerting/routes/0", headers=bearer(tenant.admin_key)
    )
    assert deleted.status_code == 204
    assert (await get(client, tenant, "routes")).json()["items"] == [second]


async def test_route_to_an_unknown_receiver_is_refused_with_the_field(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    refused = await put(client, tenant, "routes/0", {"receiver": "nobody"})
    assert refused.status_code == 400
    assert refused.json()["code"] == "UNDEFINED_RECEIVER"
    assert refused.json()["field"] == "receiver"
    nested = await put(
        client, tenant, "routes/0", {"receiver": "default", "routes": [{"receiver": "ghost"}]}
    )
    assert nested.json()["field"] == "routes[0].receiver"
    assert (await get(client, tenant, "config")).headers["ETag"] == '"1"'


async def test_a_receiver_in_use_cannot_be_deleted(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    await put(client, tenant, "receivers/ops", WEBHOOK)
    await put(client, tenant, "routes/0", {"receiver": "ops"})
    url = f"{tenant.path}/alerting/receivers/ops"
    in_use = await client.delete(url, headers=bearer(tenant.admin_key))
    assert in_use.status_code == 409
    assert in_use.json()["code"] == "RECEIVER_IN_USE"
    await client.delete(f"{tenant.path}/alerting/routes/0", headers=bearer(tenant.admin_key))
    gone = await client.delete(url, headers=bearer(tenant.admin_key))
    assert gone.status_code == 204
    assert (await client.delete(url, headers=bearer(tenant.admin_key))).status_code == 404


async def test_root_route_global_templates_and_time_intervals_show_in_the_wrapper(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    glob = {"resolve_timeout": "5m", "smtp_smarthost": "mail.example.com:587", "smtp_from": "a@b.c"}
    assert (await put(client, tenant, "global", glob)).json() == glob
    await put(client, tenant, "receivers/mail", {"email_configs": [{"to": "ops@example.com"}]})
    await put(client, tenant, "routes/0", {"receiver": "default"})
    root = await put(
        client, tenant, "route", {"receiver": "mail", "group_by": ["alertname"], "group_wait": "1m"}
    )
    assert root.status_code == 200
    assert root.json()["routes"] == [{"receiver": "default"}]  # children are kept
    template = '{{ define "mail.subject" }}[{{ .Status }}] {{ .CommonLabels.alertname }}{{ end }}'
    created = await put(client, tenant, "templates/mail.tmpl", {"contents": template})
    assert created.status_code == 201
    assert created.json() == {"filename": "mail.tmpl", "contents": template}
    window = [
        {"weekdays": ["monday:friday"], "times": [{"start_time": "09:00", "end_time": "17:00"}]}
    ]
    interval = await put(client, tenant, "time-intervals/office", {"time_intervals": window})
    assert interval.status_code == 201
    assert interval.json() == {"name": "office", "time_intervals": window}
    await put(
        client, tenant, "routes/0", {"receiver": "default", "active_time_intervals": ["office"]}
    )

    config = (await get(client, tenant, "config")).json()
    assert config["global"] == glob
    assert config["route"]["receiver"] == "mail"
    assert config["route"]["routes"] == [
        {"receiver": "default", "active_time_intervals": ["office"]}
    ]
    assert config["templates"] == {"mail.tmpl": template}
    assert config["time_intervals"] == [{"name": "office", "time_intervals": window}]
    assert (await get(client, tenant, "templates")).json()["items"] == [
        {"filename": "mail.tmpl", "contents": template}
    ]

    in_use = await client.delete(
        f"{tenant.path}/alerting/time-intervals/office", headers=bearer(tenant.admin_key)
    )
    assert in_use.status_code == 409
    assert in_use.json()["code"] == "TIME_INTERVAL_IN_USE"
    removed = await client.delete(
        f"{tenant.path}/alerting/templates/mail.tmpl", headers=bearer(tenant.admin_key)
    )
    assert removed.status_code == 204
    assert (await get(client, tenant, "templates/mail.tmpl")).status_code == 404


async def test_whole_config_replace_and_reset(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    wrapper = {
        "global": {"slack_api_url": "https://hooks.slack.com/services/T/B/X"},
        "receivers": [{"name": "chat", "slack_configs": [{"channel": "#ops"}]}],
        "route": {"receiver": "chat", "routes": [{"receiver": "chat", "matchers": ["a=b"]}]},
        "templates": {},
        "time_intervals": [],
    }
    replaced = await put(client, tenant, "config", wrapper)
    assert replaced.status_code == 200, replaced.text
    assert replaced.json() == wrapper
    unknown = await put(client, tenant, "config", {**wrapper, "inhibit_rules": []})
    assert unknown.status_code == 400
    assert unknown.json()["code"] == "UNKNOWN_FIELD"
    reset = await client.delete(f"{tenant.path}/alerting/config", headers=bearer(tenant.admin_key))
    assert reset.status_code == 200
    assert reset.json()["receivers"] == [{"name": "default"}]
    assert reset.headers["ETag"] == '"3"'


async def test_validation_errors_point_at_the_body_field(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    cases: list[tuple[str, Any, str, str]] = [
        (
            "receivers/x",
            {"webhook_configs": [{"url": "ftp://x"}]},
            "INVALID_URL",
            "webhook_configs[0].url",
        ),
        ("receivers/x", {"webhook_configs": [{}]}, "VALIDATION_FAILED", "webhook_configs[0].url"),
        (
            "receivers/x",
            {"email_configs": [{"to": "a@b.c"}]},
            "VALIDATION_FAILED",
            "email_configs[0].smarthost",
        ),
        ("receivers/x", {"sms_configs": []}, "UNKNOWN_FIELD", "sms_configs"),
        ("receivers/x", {"sns_configs": []}, "UNSUPPORTED_INTEGRATION", "sns_configs"),
        (
            "receivers/x",
            {
                "webhook_configs": [
                    {"url": "https://a/", "http_config": {"bearer_token_file": "/etc/x"}}
                ]
            },
            "FILE_REFERENCE_NOT_ALLOWED",
            "webhook_configs[0].http_config.bearer_token_file",
        ),
        (
            "routes/0",
            {"receiver": "default", "group_wait": "5 minutes"},
            "INVALID_DURATION",
            "group_wait",
        ),
        (
            "routes/0",
            {"receiver": "default", "matchers": ['severity=~"("']},
            "INVALID_MATCHER",
            "matchers[0]",
        ),
        (
            "routes/0",
            {"receiver": "default", "match_re": {"job": "a(?=b)"}},
            "INVALID_REGEX",
            "match_re.job",
        ),
        (
            "routes/0",
            {"receiver": "default", "mute_time_intervals": ["never"]},
            "UNDEFINED_TIME_INTERVAL",
            "mute_time_intervals[0]",
        ),
        ("global", {"resolve_timeout": "soon"}, "INVALID_DURATION", "resolve_timeout"),
        ("templates/a.tmpl", {"contents": "{{ if .X }}"}, "INVALID_TEMPLATE", "contents"),
        ("templates/.hidden", {"contents": "x"}, "INVALID_NAME", "filename"),
        (
            "time-intervals/w",
            {"time_intervals": [{"weekdays": ["funday"]}]},
            "INVALID_TIME_INTERVAL",
            "time_intervals[0].weekdays[0]",
        ),
        ("route", {"receiver": "default", "matchers": ["a=b"]}, "VALIDATION_FAILED", ""),
    ]
    for path, body, code, field in cases:
        response = await put(client, tenant, path, body)
        assert response.status_code == 400, (path, body, response.text)
        assert response.json()["code"] == code, (path, body, response.json())
        assert response.json().get("field", "") == field, (path, body, response.json())
    config = await get(client, tenant, "config")
    assert config.headers["ETag"] == '"1"'
