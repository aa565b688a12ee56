"""Tenants' templates are restricted to a subset whose cost per notification is bounded."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tenantplane.alerting.repository import AlertingRepository
from tenantplane.alerting.validation.template_subset import BUILTIN_DIR
from tests.alerting.test_cli import tenantplane
from tests.alerting.test_template_rules import BUILTIN_TEMPLATE_FILES, put_template
from tests.conftest import make_settings
from tests.factories import Factory, TenantFixture
from tests.http_client import api_client, bearer, running_app

# Each once took a shared Alertmanager to gigabytes from a few hundred bytes of template.
ATTACKS = {
    "printf width": ('{{ printf "%01000000d" 0 }}', "printf verb %0"),
    "reassignment in range": (
        '{{ $x := "ab" }}{{ range .Alerts }}{{ $x = printf "%s%s%s%s" $x $x $x $x }}{{ end }}',
        "assignment to $x with '='",
    ),
    "regex built at run time": (
        '{{ reReplaceAll (printf "%s%s" "(a*)" "*") "$1$1" .Status }}',
        "reReplaceAll: the regular expression and replacement must be string literals",
    ),
}

COMMON = (
    '{{ define "acme.title" }}[{{ .Status | toUpper }}{{ if eq .Status "firing" }}:'
    "{{ .Alerts.Firing | len }}{{ end }}] {{ .CommonLabels.alertname }}{{ end }}\n"
    '{{ define "acme.text" }}{{ range $i, $a := .Alerts }}{{ if gt $i 0 }}, {{ end }}'
    '{{ printf "%s: %s" .Labels.alertname (index .Annotations "summary") }}'
    "{{ with .Annotations.description }} ({{ . }}){{ else }} -{{ end }}"
    '{{ .Labels.SortedPairs.Values | join " " }} {{ .StartsAt.Format "15:04" }}{{ end }}'
    '{{ template "acme.footer" . }}{{ end }}\n'
    '{{ define "acme.footer" }}{{ (index .Alerts 0).Labels.team }} '
    '{{ if match "^prod" .CommonLabels.env }}!{{ end }}'
    '{{ reReplaceAll "-" "_" .Receiver }}{{ end }}\n'
)


async def put_receiver(
    client: httpx.AsyncClient, tenant: TenantFixture, title: str
) -> httpx.Response:
    slack = {"api_url": "https://hooks.slack.com/services/T/B/X", "title": title}
    return await client.put(
        f"{tenant.path}/alerting/receivers/chat",
        json={"slack_configs": [slack]},
        headers=bearer(tenant.admin_key),
    )


def refused_for(response: httpx.Response, code: str, field: str, naming: str) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert (body["code"], body["field"]) == (code, field)
    assert naming in body["message"]


@pytest.mark.parametrize("attack", sorted(ATTACKS))
async def test_attacks_are_refused_in_files_and_receiver_fields(
    client: httpx.AsyncClient, factory: Factory, attack: str
) -> None:
    template, naming = ATTACKS[attack]
    tenant = await factory.tenant()
    in_file = f'{{{{ define "acme.x" }}}}{template}{{{{ end }}}}'
    refused_for(
        await put_template(client, tenant, "x.tmpl", in_file),
        "TEMPLATE_NOT_ALLOWED",
        "contents",
        naming,
    )
    refused_for(
        await put_receiver(client, tenant, template),
        "TEMPLATE_NOT_ALLOWED",
        "slack_configs[0].title",
        naming,
    )
    # The whole configuration at once, as `PUT /config` takes it.
    config = await client.get(f"{tenant.path}/alerting/config", headers=bearer(tenant.admin_key))
    document = config.json()
    document["templates"] = {"x.tmpl": in_file}
    whole = await client.put(
        f"{tenant.path}/alerting/config",
        json=document,
        headers={**bearer(tenant.admin_key), "If-Match": config.headers["ETag"]},
    )
    refused_for(whole, "TEMPLATE_NOT_ALLOWED", "templates.x.tmpl", naming)
    after = await client.get(f"{tenant.path}/alerting/config", headers=bearer(tenant.admin_key))
    assert after.headers["ETag"] == config.headers["ETag"]
    assert after.json() == config.json()


async def test_common_templates_and_built_in_ones_are_accepted(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    stored = await put_template(client, tenant, "acme.tmpl", COMMON)
    assert stored.status_code == 201, stored.text
    for title in (
        '{{ template "acme.title" . }} {{ template "acme.text" . }}',
        '{{ template "email.default.html" . }}',
        '{{ template "opsgenie.default.description" . }}{{ template "slack.default.title" . }}',
    ):
        response = await put_receiver(client, tenant, title)
        assert response.status_code in (200, 201), (title, response.text)


async def test_constructs_outside_the_subset_are_named(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    for title, naming in (
        ('{{ html "<b>" }}', 'function "html" is outside the template subset'),
        ("{{ .Alerts }}", "printing a list of alerts"),
        ("{{ .Nope }}", "field .Nope of the notification"),
        ('{{ printf "%q" .Status }}', "printf verb %q"),
        ('{{ printf "%s %s" .Status }}', "printf with 2 verbs takes as many arguments"),
        ('{{ match "(" .Status }}', "match: invalid regular expression"),
        ("{{ range .Status }}{{ end }}", "range over str"),
    ):
        refused_for(
            await put_receiver(client, tenant, title),
            "TEMPLATE_NOT_ALLOWED",
            "slack_configs[0].title",
            naming,
        )
    # A file's define is checked against the grammar even when no field invokes it.
    refused_for(
        await put_template(
            client, tenant, "b.tmpl", '{{ define "acme.b" }}{{ toUpper html }}{{ end }}'
        ),
        "TEMPLATE_NOT_ALLOWED",
        "contents",
        'line 1: function "html" is outside the template subset',
    )
    # A define outside the subset is refused where it is, naming the template.
    stored = await put_template(
        client, tenant, "a.tmpl", '{{ define "acme.a" }}{{ range . }}{{ end }}{{ end }}'
    )
    assert stored.status_code == 201, stored.text
    refused_for(
        await put_receiver(client, tenant, '{{ template "acme.a" . }}'),
        "TEMPLATE_NOT_ALLOWED",
        "templates.a.tmpl",
        'template "acme.a": line 1: range over the notification',
    )


async def test_cost_beyond_the_bound_at_the_reference_notification_is_refused(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    # N^2·S bytes: 100 * 100 * 512 fits in 16 MiB; N^2·K·S does not.
    twice = "{{ range .Alerts }}{{ range $.Alerts }}{{ .Labels.a }}{{ end }}{{ end }}"
    accepted = await put_receiver(client, tenant, twice)
    assert accepted.status_code in (200, 201), accepted.text
    pairs = (
        "{{ range .Alerts }}{{ range $.Alerts }}{{ range .Labels.SortedPairs }}"
        "{{ .Value }}{{ end }}{{ end }}{{ end }}"
    )
    refused_for(
        await put_receiver(client, tenant, pairs),
        "TEMPLATE_TOO_COSTLY",
        "slack_configs[0].title",
        "N^2·K·S",
    )
    # Growth by nesting functions is bounded by the polynomial's degree.
    nested = "{{ " + "reReplaceAll `a` `$0$0` (" * 4 + ".Status" + ")" * 4 + " }}"
    refused_for(
        await put_receiver(client, tenant, nested),
        "TEMPLATE_TOO_COSTLY",
        "slack_configs[0].title",
        "degree",
    )


def test_built_in_templates_are_alertmanagers_own_files() -> None:
    """The copies the cost model reads are Debian's Alertmanager 0.25 files, unchanged."""
    ours = {path.name: path.read_bytes() for path in BUILTIN_DIR.glob("*.tmpl")}
    installed = {path.name: path.read_bytes() for path in BUILTIN_TEMPLATE_FILES.glob("*.tmpl")}
    assert ours == installed
    assert set(ours) == {"default.tmpl", "email.tmpl"}


async def test_costing_a_field_visits_a_bounded_number_of_nodes(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """Level n invokes level n-1 twice, once with its dot and once with a longer string, so
    the bottom template is invoked with 2^8 different types (memoised by type, each is
    costed anew): 256 x 30,000 nodes took 160 s to visit before visits were bounded."""
    tenant = await factory.tenant()
    lines = ['{{ define "acme.l0" }}' + "{{ . }}" * 30_000 + "{{ end }}"]
    for level in range(1, 9):
        longer = f'(printf "%s{"x" * 2**level}" .)'
        call = f'{{{{ template "acme.l{level - 1}" '
        below = f"{call}. }}}}{call}{longer} }}}}"
        lines.append(f'{{{{ define "acme.l{level}" }}}}{below}{{{{ end }}}}')
    stored = await put_template(client, tenant, "deep.tmpl", "\n".join(lines))
    assert stored.status_code == 201, stored.text
    refused_for(
        await put_receiver(client, tenant, '{{ template "acme.l8" .Receiver }}'),
        "TEMPLATE_TOO_COSTLY",
        "slack_configs[0].title",
        "costing it would visit more than 50000 template nodes",
    )


async def test_bound_limits_follow_the_settings(
    factory: Factory, database_url: str, tmp_path: Path
) -> None:
    settings = make_settings(
        database_url,
        tmp_path,
        alerting_max_template_output_bytes=1000,
        alerting_max_template_steps=3000,
    )
    async with running_app(settings) as app, api_client(app) as client:
        tenant = await factory.tenant()
        # S = 512 bytes at the reference notification: one string fits, N strings do not.
        accepted = await put_receiver(client, tenant, "{{ .Status }}")
        assert accepted.status_code in (200, 201), accepted.text
        refused_for(
            await put_receiver(client, tenant, "{{ range .Alerts }}{{ .Status }}{{ end }}"),
            "TEMPLATE_TOO_COSTLY",
            "slack_configs[0].title",
            "may take 51200 bytes",
        )
        # An email's html is escaped by html/template: 8·S + 16 bytes for the same value.
        email = {
            "to": "a@example.com",
            "from": "b@example.com",
            "smarthost": "mail.example.com:25",
            "html": "{{ .Status }}",
        }
        refused_for(
            await client.put(
                f"{tenant.path}/alerting/receivers/mail",
                json={"email_configs": [email]},
                headers=bearer(tenant.admin_key),
            ),
            "TEMPLATE_TOO_COSTLY",
            "email_configs[0].html",
            "may take 4112 bytes",
        )
        email["text"], email["html"] = email["html"], "<p>plain</p>"
        mail = await client.put(
            f"{tenant.path}/alerting/receivers/mail",
            json={"email_configs": [email]},
            headers=bearer(tenant.admin_key),
        )
        assert mail.status_code in (200, 201), mail.text
        # One byte written, but toUpper reads S and writes 3S, and eq reads those 3S.
        refused_for(
            await put_receiver(client, tenant, '{{ if eq (toUpper .Status) "x" }}y{{ end }}'),
            "TEMPLATE_TOO_COSTLY",
            "slack_configs[0].title",
            "execution steps",
        )


async def test_a_field_may_do_what_alertmanagers_default_for_it_does(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """`html: '{{ template "email.default.html" . }}'` is Alertmanager's own default: a field
    left unset renders it anyway, so naming it costs nothing more. Twice it is refused: its
    bound, escaped as html, is over 16 MiB at the reference notification."""
    tenant = await factory.tenant()
    email = {"to": "a@example.com", "from": "b@example.com", "smarthost": "mail.example.com:25"}
    default = '{{ template "email.default.html" . }}'
    for html, status in ((default, 201), (f" {default}\n", 200), (default * 2, 400)):
        response = await client.put(
            f"{tenant.path}/alerting/receivers/mail",
            json={"email_configs": [{**email, "html": html}]},
            headers=bearer(tenant.admin_key),
        )
        assert response.status_code == status, (html, response.text)
    assert response.json()["code"] == "TEMPLATE_TOO_COSTLY"


async def test_check_lists_stored_templates_outside_the_subset(
    factory: Factory, database_url: str, tmp_path: Path
) -> None:
    """A configuration stored before the subset existed keeps running until rewritten:
    `tenantplane alerting check` names it for the operator."""
    tenant = await factory.tenant()
    template, _ = ATTACKS["reassignment in range"]
    stale = {
        "global": {},
        "receivers": [
            {
                "name": "default",
                "slack_configs": [{"api_url": "https://hooks.slack.com/x", "title": template}],
            }
        ],
        "route": {"receiver": "default"},
        "templates": {},
        "time_intervals": [],
    }
    async with factory.database.transaction() as session:
        await AlertingRepository.from_session(session).lock(tenant.id, stale)
    code, out, _ = await tenantplane(
        "alerting", "check", "--json", database_url=database_url, cwd=tmp_path
    )
    assert code == 1, out
    [finding] = json.loads(out)["findings"]
    assert (finding["tenant"], finding["field"], finding["code"]) == (
        tenant.name,
        "receivers[0].slack_configs[0].title",
        "TEMPLATE_NOT_ALLOWED",
    )
