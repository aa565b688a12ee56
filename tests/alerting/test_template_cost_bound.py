"""The cost model is an upper bound: templates generated from the subset's grammar, rendered
by the real Alertmanager (amtool) on generated notifications, never write more bytes than
the bound computed for that notification; and what Alertmanager refuses, we refuse."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st

from tenantplane.alerting.validation.gotemplate import TemplateSyntaxError, check_template
from tenantplane.alerting.validation.template_cost import SCALAR
from tenantplane.alerting.validation.template_subset import BUILTIN_DIR, Bodies, field_bound
from tenantplane.alerting.validation.template_tree import NotAllowed, build_tree
from tests.alerting import amtool

# Characters that change size under toUpper (ɐ: 2 bytes to 3), toLower (Ⱥ), urlquery (<, $,
# é) and reReplaceAll (a, -), or shrink (dotless i, long s).
ALPHABET = "ab-$<é ıſɐȺ"
NAMES = ["alertname", "team", "a", "b"]


@st.composite
def notifications(draw: st.DrawFn) -> dict[str, Any]:
    """Strings of one length each (64 to 100 characters, so that S is about every
    string's size and the bound is near what is written), 1 to 4 alerts, 1 to 4 labels
    per set (empty ones would write little, and hide a bound too low)."""
    length = draw(st.integers(64, 100))
    text = st.text(alphabet=ALPHABET, min_size=length, max_size=length)
    labels = st.dictionaries(st.sampled_from(NAMES), text, min_size=1, max_size=4)
    alerts = [
        {
            "status": draw(st.sampled_from(["firing", "resolved"])),
            "labels": draw(labels),
            "annotations": draw(labels),
            "startsAt": "2024-01-02T03:04:05Z",
            "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": draw(text),
            "fingerprint": draw(text),
        }
        for _ in range(draw(st.integers(1, 4)))
    ]
    return {
        "receiver": draw(text),
        "status": draw(st.sampled_from(["firing", "resolved"])),
        "alerts": alerts,
        "groupLabels": draw(labels),
        "commonLabels": draw(labels),
        "commonAnnotations": draw(labels),
        "externalURL": draw(text),
    }


def measures(data: dict[str, Any]) -> tuple[int, int, int]:
    """N, K and S of a notification, as docs/alerting.md defines them."""
    label_sets = [data["groupLabels"], data["commonLabels"], data["commonAnnotations"]]
    strings = [data["receiver"], data["status"], data["externalURL"]]
    for alert in data["alerts"]:
        label_sets += [alert["labels"], alert["annotations"]]
        strings += [alert["status"], alert["generatorURL"], alert["fingerprint"]]
    for labels in label_sets:
        strings += [*labels, *labels.values()]
    longest = max(len(s.encode()) for s in strings)
    return len(data["alerts"]), max(len(labels) for labels in label_sets), max(SCALAR, longest)


# Values of each kind of dot, printable as they are.
_SCALARS = {
    "data": [".Receiver", ".ExternalURL", ".CommonLabels.a", ".Status", "(len .Alerts)"],
    "alert": [".Labels.a", ".Annotations.team", ".Fingerprint", ".StartsAt", "$.Receiver"],
    "pair": [".Name", ".Value"],
    "str": ["."],
}
_LISTS = {
    "data": [
        (".Alerts", "alert"),
        (".Alerts.Firing", "alert"),
        (".CommonLabels.SortedPairs", "pair"),
        (".GroupLabels.Values", "str"),
    ],
    "alert": [
        (".Labels.SortedPairs", "pair"),
        (".Annotations.Values", "str"),
        ("$.Alerts", "alert"),
    ],
    "pair": [],
    "str": [],
}


# How the subset's functions may wrap a value (``v``) beside another one (``w``).
WRAPPERS = [
    "(urlquery {v})",
    "(toUpper {v})",
    "(title {v})",
    "({v} | toLower)",
    '(printf "%s=%s" {v} {w})',
    '(printf "%d%%" (len {v}))',
    "(print {v} {w} 1)",
    "(safeHtml {v})",
    '(reReplaceAll "[a-]" "$0$0" {v})',
    '(join "," (stringSlice {v} {w}))',
    "(or {v} {w})",
    "(index (stringSlice {v}) 0)",
]


@st.composite
def scalar(draw: st.DrawFn, dot: str, depth: int) -> str:
    base = draw(st.sampled_from([*_SCALARS[dot], '"lit<$"', "$v"]))
    if depth <= 0:
        return base
    inner = draw(scalar(dot, draw(st.integers(0, depth - 1))))
    return draw(st.sampled_from(WRAPPERS)).format(v=inner, w=base)


@st.composite
def condition(draw: st.DrawFn, dot: str) -> str:
    value = draw(scalar(dot, 1))
    return draw(
        st.sampled_from(
            [
                value,
                f'eq {value} "firing"',
                f'match "^a+" {value}',
                f"not {value}",
                "gt (len $.Alerts) 1",
            ]
        )
    )


@st.composite
def body(draw: st.DrawFn, dot: str, depth: int) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        choices = ["text", "print", "print", "if", "declare", "call"]
        if depth > 0 and _LISTS[dot]:
            choices += ["range", "range"]
        kind = draw(st.sampled_from(choices))
        if kind == "text":
            parts.append(draw(st.sampled_from(["x", "<é>", "\n"])))
        elif kind == "print":
            parts.append(f"{{{{ {draw(scalar(dot, 3))} }}}}")
        elif kind == "declare":
            parts.append(f"{{{{ $v := {draw(scalar(dot, 2))} }}}}{{{{ $v }}}}")
        elif kind == "call":
            parts.append(f'{{{{ template "t.{dot}" . }}}}')
        elif kind == "if":
            then = draw(body(dot, depth - 1)) if depth > 0 else "y"
            parts.append(f"{{{{ if {draw(condition(dot))} }}}}{then}{{{{ else }}}}n{{{{ end }}}}")
        else:
            pipeline, element = draw(st.sampled_from(_LISTS[dot]))
            inner = draw(body(element, depth - 1))
            parts.append(f"{{{{ range {pipeline} }}}}{inner}{{{{ end }}}}")
    return '{{ $v := "v" }}' + "".join(parts)


@st.composite
def single(draw: st.DrawFn) -> str:
    """One value printed, in a range or not: where the bound is tightest."""
    pipeline, element = draw(st.sampled_from([("", "data"), *_LISTS["data"]]))
    action = f'{{{{ $v := "v" }}}}{{{{ {draw(scalar(element, draw(st.integers(0, 2))))} }}}}'
    return f"{{{{ range {pipeline} }}}}{action}{{{{ end }}}}" if pipeline else action


# One define per kind of dot, for `template "t.<kind>" .` to invoke.
DEFINES = (
    '{{ define "t.data" }}{{ template "slack.default.title" . }}{{ .Alerts.Firing | len }}{{ end }}'
    '{{ define "t.alert" }}{{ range .Labels.SortedPairs }}{{ .Name }}={{ .Value | toUpper }} '
    "{{ end }}{{ end }}"
    '{{ define "t.pair" }}{{ printf "%s: %s" .Name .Value }}{{ end }}'
    '{{ define "t.str" }}[{{ . }}]{{ end }}'
)


def template_files(directory: Path) -> None:
    """Ours, and Alertmanager's built-in ones (amtool renders without them otherwise)."""
    (directory / "t.tmpl").write_text(DEFINES, encoding="utf-8")
    for builtin in BUILTIN_DIR.glob("*.tmpl"):
        shutil.copy(builtin, directory / builtin.name)


def bound(text: str, bodies: Bodies, n: int, k: int, s: int, *, html: bool = False) -> int:
    tree = build_tree(check_template(text))
    return field_bound(tree.top, bodies, html=html).output.at(n, k, s)


def defines() -> Bodies:
    tree = build_tree(check_template(DEFINES))
    return {
        name: [(nodes, "templates.t.tmpl") for nodes in found]
        for name, found in tree.definitions.items()
    }


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(text=st.one_of(body("data", 2), single()), data=notifications())
def test_rendered_size_never_exceeds_the_bound(text: str, data: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        template_files(root)
        (root / "data.json").write_text(json.dumps(data), encoding="utf-8")
        rendering = amtool.render(text, root / "data.json", root)
    n, k, s = measures(data)
    limit = bound(text, defines(), n, k, s)
    # Only errors at run time (toUpper of a number, say) may stop a rendering.
    assert rendering.ok or "executing" in rendering.error, rendering.error
    # Steered towards the tightest cases, where a bound too low would show first.
    target(len(rendering.output) / max(limit, 1))
    assert len(rendering.output) <= limit, (text, len(rendering.output), limit)


# Variants Alertmanager refuses at load or parse time, beside ones in the subset it takes.
REFUSED_OR_NOT = [
    "{{ .Status | nope }}",
    '{{ printf "%5s" .Status }}',
    "{{ $x := 1 }}{{ $x = 2 }}",
    "{{ range .Alerts }}{{ break }}{{ end }}{{ break }}",
    "{{ if .Status }}",
    '{{ template "t.data" }}{{ end }}',
    "{{ $y }}",
    '{{ reReplaceAll "(" "" .Status }}',
    '{{ match "a)(b" .Status }}',  # valid anchored, as matchers are checked; not here
    '{{ match "a" .Status }}{{ slice .Status 1 }}',
    "{{ .Status | toUpper }}",
]


def test_what_alertmanager_refuses_we_refuse(tmp_path: Path) -> None:
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"alerts": [], "status": "firing"}), encoding="utf-8")
    template_files(tmp_path)
    verdicts = []
    for text in REFUSED_OR_NOT:
        rendering = amtool.render(text, data, tmp_path)
        try:
            bound(text, defines(), 0, 0, SCALAR)
        except (TemplateSyntaxError, NotAllowed):
            ours = False
        else:
            ours = True
        verdicts.append((text, rendering.ok, ours))
        if not rendering.ok:
            assert not ours, (text, rendering.error)
    assert {ok for _, ok, _ in verdicts} == {True, False}


# html/template escapes what a template prints by its context: text, attribute, URL,
# script, event handler, style.
HTML_CONTEXTS = [
    "<p>{{ .Receiver }}</p>",
    '<a href="{{ .Receiver }}" title={{ .ExternalURL }}>x</a>',
    "<script>var x = {{ .Receiver }};</script>",
    "<a onclick=\"f({{ .Receiver }}, '{{ .Status }}')\">x</a>",
    "<style>p { color: {{ .Receiver }} }</style>{{ range .Alerts }}<b>{{ .Labels.a }}</b>{{ end }}",
    "<a href='{{ .Receiver }}?q={{ .Receiver }}'>{{ template \"t.alert\" (index .Alerts 0) }}</a>",
]


def test_html_rendering_stays_within_the_html_bound(tmp_path: Path) -> None:
    """An email's `html` field is executed by html/template, whose escaping multiplies
    what data prints: `<` is `\\u003c` in a script, `"` is `\\&#34;` in an event handler."""
    hostile = "<'\"&+\u2028\x00" * 12
    data = {
        "receiver": hostile,
        "status": hostile,
        "externalURL": hostile,
        "alerts": [
            {
                "status": "firing",
                "labels": {"a": hostile},
                "annotations": {},
                "startsAt": "2024-01-02T03:04:05Z",
                "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": hostile,
                "fingerprint": hostile,
            }
        ],
        "groupLabels": {"a": hostile},
        "commonLabels": {"a": hostile},
        "commonAnnotations": {"a": hostile},
    }
    (tmp_path / "data.json").write_text(json.dumps(data), encoding="utf-8")
    template_files(tmp_path)
    n, k, s = measures(data)
    over = []
    for text in HTML_CONTEXTS:
        rendering = amtool.render(text, tmp_path / "data.json", tmp_path, html=True)
        assert rendering.ok, rendering.error
        limit = bound(text, defines(), n, k, s, html=True)
        if len(rendering.output) > limit:
            over.append((text, len(rendering.output), limit))
    assert over == []
