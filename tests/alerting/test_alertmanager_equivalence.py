"""The API accepts what Alertmanager accepts and refuses what it refuses (real amtool)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tenantplane.alerting.validation.durations import parse_duration, parse_go_duration
from tenantplane.alerting.validation.goregex import RegexLimitError, check_go_regex
from tenantplane.alerting.validation.gotemplate import check_template
from tenantplane.alerting.validation.matchers import parse_matchers
from tests.alerting import amtool
from tests.alerting.corpus import INVALID, STRICTER, VALID
from tests.factories import Factory
from tests.http_client import bearer


async def test_accepted_configurations_pass_amtool(
    client: httpx.AsyncClient, factory: Factory, tmp_path: Path
) -> None:
    tenant = await factory.tenant()
    stored = []
    for name, wrapper in VALID:
        put = await client.put(
            f"{tenant.path}/alerting/config", json=wrapper, headers=bearer(tenant.admin_key)
        )
        assert put.status_code == 200, (name, put.text)
        read = await client.get(f"{tenant.path}/alerting/config", headers=bearer(tenant.admin_key))
        assert read.json() == wrapper, name
        stored.append(read.json())
    verdicts = amtool.check_documents(stored, tmp_path)
    for (name, _), verdict in zip(VALID, verdicts, strict=True):
        assert verdict.ok, (name, verdict.reason)


async def test_refused_configurations_are_refused_and_change_nothing(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    for name, wrapper, code in INVALID:
        response = await client.put(
            f"{tenant.path}/alerting/config", json=wrapper, headers=bearer(tenant.admin_key)
        )
        assert response.status_code == 400, (name, response.text)
        assert response.json()["code"] == code, (name, response.json())
    config = await client.get(f"{tenant.path}/alerting/config", headers=bearer(tenant.admin_key))
    assert config.headers["ETag"] == '"1"'


def test_amtool_refuses_every_refused_configuration(tmp_path: Path) -> None:
    verdicts = amtool.check_documents([wrapper for _, wrapper, _ in INVALID], tmp_path)
    accepted = [name for (name, _, _), verdict in zip(INVALID, verdicts, strict=True) if verdict.ok]
    assert accepted == []


async def test_stricter_refusals_are_this_services_alone(
    client: httpx.AsyncClient, factory: Factory, tmp_path: Path
) -> None:
    """Each deliberate refusal is refused by the API with its code, and Alertmanager loads
    the same configuration: the refusal is the only difference."""
    tenant = await factory.tenant()
    for name, wrapper, code in STRICTER:
        response = await client.put(
            f"{tenant.path}/alerting/config", json=wrapper, headers=bearer(tenant.admin_key)
        )
        assert response.status_code == 400, (name, response.text)
        assert response.json()["code"] == code, (name, response.json())
    verdicts = amtool.check_documents([wrapper for _, wrapper, _ in STRICTER], tmp_path)
    refused = [
        (name, v.reason) for (name, _, _), v in zip(STRICTER, verdicts, strict=True) if not v.ok
    ]
    assert refused == []


REGEXES = [
    "a|b",
    "(?i)abc",
    "(?i:x)y",
    "(?s).",
    "(?U)a+",
    "(?)",
    "^*",
    "a{,5}",
    "x{2}",
    "x{2,}",
    "x{1,1000}",
    "[]a]",
    "[^]a]",
    "[a-]",
    "[-a]",
    "\\Qa.b\\E",
    "\\x41\\x{263a}",
    "\\012",
    "\\pL\\p{Greek}\\PN\\P{^Lu}",
    "[[:^alpha:][:digit:]]",
    "\\A\\b\\B\\z",
    "(?P<n>x)(?P<m>y)",
    "(?P<n>x)(?P<n>y)",
    "\\.\\*\\+\\?\\{\\}\\[\\]\\(\\)\\|\\^\\$\\\\",
    "[\\d\\s\\w]",
    ".*foo.*",
    "",
    "(?=x)",
    "(?!x)",
    "(?<n>x)",
    "(?P=n)",
    "(?P<>x)",
    "\\1",
    "\\8",
    "\\C",
    "\\e",
    "\\Z",
    "[[:foo:]]",
    "\\p{Foo}",
    "x{1001}",
    "x{3,2}",
    "a**",
    "a+*",
    "a*??",
    "x{2}{3}",
    "(a",
    "a)",
    "[a",
    "[b-a]",
    "*",
    "+a",
    "a|*",
    "(*)",
    "(?i)*",
    "\\",
    "(?-)",
    "(?i-)",
    "(?x)",
    "\\x{110000}",
    "\\xZZ",
    "[\\b]",
    "(a{1000}){1000}",
    "(a{10}){100}",
    "\\C",
    "[\\C]",
    "(?<n>x)",
    "(?P<é>x)",
    "\\p{Yezidi}",
    "\\p{Vithkuqi}",
    "\\p{Kawi}",
    "(" * 100 + "a" + ")" * 100,
]
# Accepted by Alertmanager, refused by this service's regex limits (docs/alerting.md).
STRICTER_REGEXES = [
    ("(" * 998 + "a" + ")" * 998, "REGEX_TOO_DEEP"),
    ("(?:" * 101 + "a" + ")" * 101, "REGEX_TOO_DEEP"),
    ("\\pL{1000}", "REGEX_TOO_LARGE"),
    ("a{1000}" * 2000, "REGEX_TOO_LARGE"),
]
MATCHERS = [
    "a=b",
    'a="b"',
    "a!=b",
    'a=~"x|y"',
    'a!~"x.*"',
    "{a=b,c=d}",
    'a="b,c", d=e',
    "a=",
    'a=""',
    'a="\\"q\\""',
    "a:b=c",
    "  a  =  b  ",
    "a=b c",
    'a="\\n"',
    "a=\\",
    "a=ü",
    'a="x\\y"',
    "a",
    "=b",
    "a==b",
    "1a=b",
    'a="b',
    'a=b"',
    'a="b"c"',
    'a=~"("',
    "a-b=c",
    "a=~*",
    "a~=b",
]
DURATIONS = [
    "0",
    "1s",
    "10ms",
    "1m30s",
    "2h",
    "1d",
    "1w",
    "1y",
    "1y2w3d4h5m6s7ms",
    "00s",
    "",
    "1",
    "1h1d",
    "1.5h",
    "-1s",
    "1 s",
    "1S",
    "1hh",
    "1us",
    "s",
]
GO_DURATIONS = [
    "0",
    "1.5h",
    "-1s",
    "+5s",
    ".5s",
    "5.s",
    "1h30m10s5ms3us2ns",
    "1µs",
    "1μs",
    "300ms",
    "",
    "1d",
    "300",
    ".s",
    "-",
    "1.2.3s",
    "1e3s",
    "9999999999h",
    "1 s",
    "1S",
]
TEMPLATES = [
    "{{ .X }}",
    "{{- .X -}}",
    "{{-.X}}",
    "{{ range .Alerts }}{{ .Labels.a }}{{ else }}none{{ end }}",
    "{{ if and .A (not .B) }}x{{ else if .C }}y{{ else }}z{{ end }}",
    "{{ with $x := .A }}{{ $x }}{{ end }}",
    '{{ block "acme.b" . }}default{{ end }}',
    '{{ template "x" }}',
    '{{ printf "%d" 1 | len }}',
    "{{ 1 }}{{ 1.5 }}{{ -2 }}{{ 0x1F }}{{ 'a' }}{{ true }}{{ nil | print }}",
    "{{ `raw` }}",
    "{{ range $i, $e := . }}{{ $i }}{{ continue }}{{ end }}",
    "text only",
    "{{/* c */}}",
    '{{ define "a" }}{{ end }}{{ define "a" }}x{{ end }}',
    "{{ .X\n.Y }}",
    "{{ .X",
    "{{ if }}{{ end }}",
    "{{ range }}{{ end }}",
    "{{ with }}{{ end }}",
    "{{ else }}",
    "{{ end }}",
    "{{ nope }}",
    "{{ $y }}",
    "{{ $x = 1 }}",
    '{{ define "a" }}',
    "{{ template x }}",
    "{{ 1 | 2 }}",
    "{{ ( }}",
    "{{ ) }}",
    "{{ nil }}",
    "{{ continue }}",
    '{{ if 1 }}{{ define "x" }}{{ end }}{{ end }}',
    "{{ .X }} {{/* unclosed",
    "{{ 'ab' }}",
    "{{ 3x }}",
    "{{ # }}",
    "{{ else if 1 }}{{ end }}",
]


def _agreement(
    cases: list[str],
    ours: Callable[[str], bool],
    document: Callable[[str], dict[str, Any]],
    tmp_path: Path,
) -> list[tuple[str, bool, str]]:
    verdicts = amtool.check_documents([document(case) for case in cases], tmp_path)
    return [
        (case, verdict.ok, verdict.reason)
        for case, verdict in zip(cases, verdicts, strict=True)
        if ours(case) != verdict.ok
    ]


def _accepts(check: Callable[[str], object]) -> Callable[[str], bool]:
    def accepts(value: str) -> bool:
        try:
            check(value)
        except ValueError:
            return False
        return True

    return accepts


def _child(**route: Any) -> dict[str, Any]:
    return {"receivers": [{"name": "d"}], "route": {"receiver": "d", "routes": [route]}}


def test_regex_checker_agrees_with_alertmanager(tmp_path: Path) -> None:
    disagreements = _agreement(
        REGEXES, _accepts(check_go_regex), lambda p: _child(match_re={"a": p}), tmp_path
    )
    assert disagreements == []


def test_regex_limits_refuse_only_what_alertmanager_would_load(tmp_path: Path) -> None:
    patterns = [pattern for pattern, _ in STRICTER_REGEXES]
    verdicts = amtool.check_documents([_child(match_re={"a": p}) for p in patterns], tmp_path)
    assert [verdict.ok for verdict in verdicts] == [True] * len(patterns)
    for pattern, code in STRICTER_REGEXES:
        with pytest.raises(RegexLimitError) as refused:
            check_go_regex(pattern)
        assert refused.value.code == code, pattern[:40]


async def test_regexes_of_one_configuration_share_one_budget(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    """Each expression fits alone; together they exceed the configuration's budget."""
    tenant = await factory.tenant()
    expression = "a{1000}" * 300  # about 300,000 RE2 instructions
    check_go_regex(expression)
    routes = [{"receiver": "default", "match_re": {"a": expression}} for _ in range(4)]
    response = await client.put(
        f"{tenant.path}/alerting/config",
        json={
            "receivers": [{"name": "default"}],
            "route": {"receiver": "default", "routes": routes},
        },
        headers=bearer(tenant.admin_key),
    )
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "REGEX_TOO_LARGE"
    assert response.json()["field"] == "route.routes[3].match_re.a"


def test_matcher_parser_agrees_with_alertmanager(tmp_path: Path) -> None:
    disagreements = _agreement(
        MATCHERS, _accepts(parse_matchers), lambda m: _child(matchers=[m]), tmp_path
    )
    assert disagreements == []


def test_duration_parser_agrees_with_alertmanager(tmp_path: Path) -> None:
    disagreements = _agreement(
        DURATIONS, _accepts(parse_duration), lambda d: _child(group_wait=d), tmp_path
    )
    assert disagreements == []


def test_go_duration_parser_agrees_with_alertmanager(tmp_path: Path) -> None:
    def document(value: str) -> dict[str, Any]:
        pushover = {"user_key": "u", "token": "t", "retry": value}
        return {
            "receivers": [{"name": "d", "pushover_configs": [pushover]}],
            "route": {"receiver": "d"},
        }

    disagreements = _agreement(GO_DURATIONS, _accepts(parse_go_duration), document, tmp_path)
    assert disagreements == []


def test_template_checker_agrees_with_alertmanager(tmp_path: Path) -> None:
    def document(text: str) -> dict[str, Any]:
        return {
            "receivers": [{"name": "d"}],
            "route": {"receiver": "d"},
            "templates": {"t.tmpl": text},
        }

    disagreements = _agreement(TEMPLATES, _accepts(check_template), document, tmp_path)
    assert disagreements == []
