"""Seeded random inputs, judged by our validators and by the real `amtool`: they must agree.

Each generator mixes valid and invalid pieces so that both verdicts occur often. The seed
is fixed, so a failure is reproducible; the disagreeing inputs are listed in the failure.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tenantplane.alerting.validation.addresses import parse_host_port, parse_http_url
from tenantplane.alerting.validation.errors import ConfigError
from tenantplane.alerting.validation.goregex import check_go_regex
from tenantplane.alerting.validation.gotemplate import check_template
from tenantplane.alerting.validation.matchers import parse_matchers
from tenantplane.alerting.validation.timeintervals import check_time_interval
from tests.alerting import amtool

SEED = 20261122
CASES = 400


def _regex(rng: random.Random) -> str:
    atoms = [
        "a",
        ".",
        "\\d",
        "\\pL",
        "\\p{Greek}",
        "[a-z]",
        "[^x]",
        "[[:digit:]]",
        "\\1",
        "\\Q",
        "\\E",
        "\\x4",
        "\\x{41}",
        "\\07",
        "(",
        ")",
        "(?:",
        "(?i)",
        "(?P<g>",
        "|",
        "*",
        "+",
        "?",
        "{2}",
        "{1,3}",
        "{,2}",
        "{",
        "^",
        "$",
        "[",
        "]",
        "-",
        "\\",
        "\\b",
        "\\z",
        "[a-",
        "[]",
        "[\\d-z]",
        "\\-",
        "(?U)",
        "*?",
        "\\C",
        "[[:^space:]]",
        "é",
        "(?=",
        "(?<n>",
    ]
    return "".join(rng.choice(atoms) for _ in range(rng.randint(1, 5)))


def _template(rng: random.Random) -> str:
    words = [
        "if",
        "else",
        "end",
        "range",
        "with",
        "define",
        "block",
        "template",
        '"a"',
        "`r`",
        "'c'",
        ".X",
        ".",
        "$",
        "$x",
        "$x :=",
        "$y =",
        "$i, $e :=",
        "|",
        "(",
        ")",
        "len",
        "printf",
        "toUpper",
        "nope",
        "1",
        "-1",
        "1.5",
        "true",
        "nil",
        "break",
        "continue",
        "eq",
        "$.X",
        "$x.Y",
        "else if",
        ",",
        '"\\q"',
        "'ab'",
        "1e3",
        "0b101",
        "print .X 1",
    ]

    def action() -> str:
        inner = " ".join(rng.choice(words) for _ in range(rng.randint(0, 4)))
        return rng.choice(["{{", "{{- ", "{{ "]) + inner + rng.choice(["}}", " -}}", " }}"])

    return "".join(rng.choice([action(), action(), "t"]) for _ in range(rng.randint(1, 4)))


def _matcher(rng: random.Random) -> str:
    name = rng.choice(["a", "_b", "a:b", "1a", "", "a-b", " a", "é"])
    op = rng.choice(["=", "!=", "=~", "!~", "==", "~", ""])
    pieces = ["x", " ", '"', "\\", '\\"', "\\n", ",", "(", ")", "*", "|", ".", "é", "{", "}"]
    value = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 5)))
    quote = rng.choice(["", '"'])
    return f"{name}{op}{quote}{value}{quote}"


def _url(rng: random.Random) -> str:
    return "".join(
        [
            rng.choice(["http", "https", "HTTP", "ftp", "", "h+t"]),
            rng.choice(["://", ":/", ":", "//"]),
            rng.choice(["", "", "u@", "u:p@", "u p@", "%zz@"]),
            rng.choice(
                [
                    "a",
                    "a.b",
                    "[::1]",
                    "[::1",
                    "a b",
                    "a%20b",
                    "a%25b",
                    "",
                    "a_b",
                    "é",
                    "a:80",
                    "a:x",
                    "a:",
                    "[::1]:80",
                    "[::1]x",
                    "a<b",
                ]
            ),
            rng.choice(["", "/", "/x y", "/%zz", "/%41", "/a?b=%zz", "#%zz", "?x", "/é"]),
        ]
    )


def _host_port(rng: random.Random) -> str:
    return "".join(
        rng.choice(["a", ":", "25", "[", "]", "::1", " ", "%"]) for _ in range(rng.randint(1, 5))
    )


def _time_interval(rng: random.Random) -> dict[str, Any]:
    def span(values: list[str]) -> str:
        first = rng.choice(values)
        return first if rng.random() < 0.4 else f"{first}:{rng.choice(values)}"

    kind = rng.randrange(6)
    if kind == 0:
        return {"weekdays": [span(["monday", "Friday", "sunday", "funday", "", "SATURDAY"])]}
    if kind == 1:
        return {"days_of_month": [span(["1", "31", "32", "0", "-1", "-31", "-32", "x", "+3"])]}
    if kind == 2:
        return {"months": [span(["january", "May", "dec", "13", "0", "12", "x", "DECEMBER"])]}
    if kind == 3:
        return {"years": [span(["2020", "0", "-5", "x", "2021", "+2022"])]}
    if kind == 4:
        times = ["00:00", "9:00", "09:00", "24:00", "23:59", "12:60", "", "25:00"]
        return {"times": [{"start_time": rng.choice(times), "end_time": rng.choice(times)}]}
    return {
        "location": rng.choice(["UTC", "Local", "Europe/Berlin", "europe/berlin", "Mars/X", ""])
    }


def _accepts(check: Callable[[Any], object]) -> Callable[[Any], bool]:
    def accepts(value: Any) -> bool:
        try:
            check(value)
        except (ValueError, ConfigError):
            return False
        return True

    return accepts


def _route(**route: Any) -> dict[str, Any]:
    return {"receivers": [{"name": "d"}], "route": {"receiver": "d", "routes": [route]}}


SUBJECTS: dict[
    str,
    tuple[Callable[[random.Random], Any], Callable[[Any], bool], Callable[[Any], dict[str, Any]]],
] = {
    "regex": (_regex, _accepts(check_go_regex), lambda p: _route(match_re={"a": p})),
    "template": (
        _template,
        _accepts(check_template),
        lambda t: {
            "receivers": [{"name": "d"}],
            "route": {"receiver": "d"},
            "templates": {"t.tmpl": t},
        },
    ),
    "matcher": (_matcher, _accepts(parse_matchers), lambda m: _route(matchers=[m])),
    "url": (
        _url,
        _accepts(parse_http_url),
        lambda u: {
            "receivers": [{"name": "d", "webhook_configs": [{"url": u}]}],
            "route": {"receiver": "d"},
        },
    ),
    "host_port": (
        _host_port,
        _accepts(parse_host_port),
        lambda h: {
            "global": {"smtp_smarthost": h},
            "receivers": [{"name": "d"}],
            "route": {"receiver": "d"},
        },
    ),
    "time_interval": (
        _time_interval,
        _accepts(lambda interval: check_time_interval(interval, "interval")),
        lambda i: {
            "receivers": [{"name": "d"}],
            "route": {"receiver": "d"},
            "time_intervals": [{"name": "t", "time_intervals": [i]}],
        },
    ),
}


@pytest.mark.parametrize("subject", sorted(SUBJECTS))
def test_validators_agree_with_amtool_on_random_inputs(subject: str, tmp_path: Path) -> None:
    generate, ours, document = SUBJECTS[subject]
    rng = random.Random(f"{SEED}-{subject}")
    cases = [generate(rng) for _ in range(CASES)]
    verdicts = amtool.check_documents([document(case) for case in cases], tmp_path)
    disagreements = [
        (case, verdict.ok, verdict.reason)
        for case, verdict in zip(cases, verdicts, strict=True)
        if ours(case) != verdict.ok
    ]
    assert disagreements == []
    # Both verdicts occurred: the inputs exercised acceptance and refusal alike.
    assert {verdict.ok for verdict in verdicts} == {True, False}
