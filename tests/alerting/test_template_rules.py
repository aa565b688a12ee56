"""A tenant's template set: what its templates may invoke and what invoking one may cost."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tenantplane.alerting.validation.templates import BUILTIN_TEMPLATES
from tests.conftest import make_settings
from tests.factories import Factory, TenantFixture
from tests.http_client import api_client, bearer, running_app

BUILTIN_TEMPLATE_FILES = Path("/usr/share/prometheus/alertmanager")


def doubling(prefix: str, levels: int) -> str:
    """Level n invokes level n-1 twice: invoking the top costs 2^(levels+1) - 1 calls."""
    lines = [f'{{{{ define "{prefix}.l0" }}}}x{{{{ end }}}}']
    for level in range(1, levels + 1):
        below = f'{{{{ template "{prefix}.l{level - 1}" . }}}}'
        lines.append(f'{{{{ define "{prefix}.l{level}" }}}}{below}{below}{{{{ end }}}}')
    return "\n".join(lines)


async def put_template(
    client: httpx.AsyncClient, tenant: TenantFixture, filename: str, contents: str
) -> httpx.Response:
    return await client.put(
        f"{tenant.path}/alerting/templates/{filename}",
        json={"contents": contents},
        headers=bearer(tenant.admin_key),
    )


def refused(response: httpx.Response, code: str, field: str) -> None:
    assert response.status_code == 400, response.text
    assert (response.json()["code"], response.json()["field"]) == (code, field)


def test_built_in_names_are_alertmanagers_own() -> None:
    """The list follows the templates Debian's Alertmanager ships."""
    defined = {
        line.split('"')[1]
        for path in BUILTIN_TEMPLATE_FILES.glob("*.tmpl")
        for line in path.read_text().splitlines()
        if '{{ define "' in line
    }
    assert defined == BUILTIN_TEMPLATES


async def test_exponential_templates_are_refused_at_the_limit(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    accepted = await put_template(client, tenant, "ok.tmpl", doubling("ok", 8))  # 511 calls
    assert accepted.status_code == 201, accepted.text
    refused(
        await put_template(client, tenant, "nine.tmpl", doubling("nine", 9)),  # 1023
        "TEMPLATE_TOO_COSTLY",
        "contents",
    )
    refused(
        await put_template(client, tenant, "bomb.tmpl", doubling("bomb", 59)),
        "TEMPLATE_TOO_COSTLY",
        "contents",
    )
    # A receiver field invoking the accepted template twice costs 1 + 2 x 511.
    slack = {"api_url": "https://hooks.slack.com/services/T/B/X", "title": ""}
    slack["title"] = '{{ template "ok.l8" . }}{{ template "ok.l8" . }}'
    response = await client.put(
        f"{tenant.path}/alerting/receivers/chat",
        json={"slack_configs": [slack]},
        headers=bearer(tenant.admin_key),
    )
    refused(response, "TEMPLATE_TOO_COSTLY", "slack_configs[0].title")
    config = await client.get(f"{tenant.path}/alerting/config", headers=bearer(tenant.admin_key))
    assert config.headers["ETag"] == '"2"'
    assert list(config.json()["templates"]) == ["ok.tmpl"]


async def test_recursive_templates_are_refused(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    refused(
        await put_template(
            client, tenant, "self.tmpl", '{{ define "a" }}{{ template "a" }}{{ end }}'
        ),
        "TEMPLATE_RECURSIVE",
        "contents",
    )
    mutual = (
        '{{ define "a" }}{{ template "b" }}{{ end }}'
        '{{ define "b" }}{{ if 1 }}{{ template "a" }}{{ end }}{{ end }}'
    )
    refused(
        await put_template(client, tenant, "mutual.tmpl", mutual), "TEMPLATE_RECURSIVE", "contents"
    )
    # Through a block (a define invoked where it stands).
    block = '{{ define "c" }}{{ block "d" . }}{{ template "c" . }}{{ end }}{{ end }}'
    refused(
        await put_template(client, tenant, "block.tmpl", block), "TEMPLATE_RECURSIVE", "contents"
    )


async def test_only_own_and_built_in_templates_may_be_invoked(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    own = await put_template(
        client,
        tenant,
        "own.tmpl",
        '{{ define "acme.title" }}{{ template "slack.default.title" . }}{{ end }}',
    )
    assert own.status_code == 201, own.text
    # Another file may invoke it (one set per configuration); an undefined name may not.
    other = await put_template(client, tenant, "other.tmpl", '{{ template "acme.title" . }}')
    assert other.status_code == 201, other.text
    refused(
        await put_template(
            client, tenant, "x.tmpl", '{{ define "acme.x" }}{{ template `beta.secret` }}{{ end }}'
        ),
        "UNKNOWN_TEMPLATE",
        "contents",
    )
    # Receivers' templated fields, every integration alike.
    for integration, config, field in (
        (
            "slack_configs",
            {"api_url": "https://hooks.slack.com/x", "text": '{{ template "beta.secret" . }}'},
            "text",
        ),
        (
            "email_configs",
            {
                "to": "a@example.com",
                "from": "b@example.com",
                "smarthost": "mail.example.com:25",
                "headers": {"Subject": '{{- template "beta.secret" . -}}'},
            },
            "headers.Subject",
        ),
        (
            "pagerduty_configs",
            {"routing_key": "k", "details": {"x": '{{ template "beta.secret" . }}'}},
            "details.x",
        ),
    ):
        response = await client.put(
            f"{tenant.path}/alerting/receivers/r",
            json={integration: [config]},
            headers=bearer(tenant.admin_key),
        )
        refused(response, "UNKNOWN_TEMPLATE", f"{integration}[0].{field}")
    allowed = await client.put(
        f"{tenant.path}/alerting/receivers/r",
        json={
            "slack_configs": [
                {
                    "api_url": "https://hooks.slack.com/x",
                    "title": '{{ template "acme.title" . }}',
                    "text": '{{ template "slack.default.text" . }}',
                }
            ]
        },
        headers=bearer(tenant.admin_key),
    )
    assert allowed.status_code == 201, allowed.text


@pytest.fixture
async def small_limits_client(
    factory: Factory, database_url: str, tmp_path: Path
) -> AsyncIterator[httpx.AsyncClient]:
    settings = make_settings(
        database_url,
        tmp_path,
        alerting_max_template_size_bytes=200,
        alerting_max_templates_count=2,
        alerting_max_template_invocations=3,
    )
    async with running_app(settings) as app, api_client(app) as client:
        yield client


async def test_size_count_and_invocation_limits_follow_the_settings(
    small_limits_client: httpx.AsyncClient, factory: Factory
) -> None:
    client = small_limits_client
    tenant = await factory.tenant()
    refused(
        await put_template(client, tenant, "big.tmpl", "x" * 201), "TEMPLATE_TOO_LARGE", "contents"
    )
    assert (await put_template(client, tenant, "a.tmpl", "x" * 200)).status_code == 201
    assert (await put_template(client, tenant, "b.tmpl", doubling("b", 1))).status_code == 201
    refused(await put_template(client, tenant, "c.tmpl", "c"), "TOO_MANY_TEMPLATES", "templates")
    refused(
        await put_template(client, tenant, "b.tmpl", doubling("b", 2)),
        "TEMPLATE_TOO_COSTLY",
        "contents",
    )
