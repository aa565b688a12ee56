"""Rules over a configuration's whole template set: its files and its receivers' templated
fields. Which templates may be invoked, and how much invoking one may cost.

Alertmanager parses every template file of a configuration into one set and executes
receiver fields (`title`, `text`, …) as templates against it. Its parser checks neither
that an invoked template exists nor what executing it costs: a template that invokes
another twice at each of 59 levels is accepted, and executing it never ends. So before
anything is stored:

- a template may invoke only templates the configuration defines itself (`define` or
  `block`) and Alertmanager's built-in ones (on a shared Alertmanager other tenants'
  templates are in the same set, and must stay out of reach);
- no template may invoke itself, directly or through others;
- the worst-case number of template invocations one invocation leads to (each call site
  counted, calls followed) and the literal text it writes are bounded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tenantplane.alerting.validation.errors import ConfigError, join
from tenantplane.alerting.validation.gotemplate import (
    MAX_TEMPLATE_BYTES,
    Body,
    Outline,
    TemplateLimitError,
    TemplateSyntaxError,
    check_template,
)
from tenantplane.alerting.validation.template_subset import check_subset

# Alertmanager 0.25's template/default.tmpl and email.tmpl (Debian's
# /usr/share/prometheus/alertmanager/*.tmpl): the names every configuration may invoke.
BUILTIN_TEMPLATES = frozenset(
    {
        "__alertmanager",
        "__alertmanagerURL",
        "__description",
        "__subject",
        "__text_alert_list",
        "discord.default.message",
        "discord.default.title",
        "email.default.html",
        "email.default.subject",
        "opsgenie.default.description",
        "opsgenie.default.message",
        "opsgenie.default.source",
        "pagerduty.default.client",
        "pagerduty.default.clientURL",
        "pagerduty.default.description",
        "pagerduty.default.instances",
        "pushover.default.message",
        "pushover.default.title",
        "pushover.default.url",
        "slack.default.callbackid",
        "slack.default.fallback",
        "slack.default.footer",
        "slack.default.iconemoji",
        "slack.default.iconurl",
        "slack.default.pretext",
        "slack.default.text",
        "slack.default.title",
        "slack.default.titlelink",
        "slack.default.username",
        "sns.default.message",
        "sns.default.subject",
        "telegram.default.message",
        "victorops.default.entity_display_name",
        "victorops.default.monitoring_tool",
        "victorops.default.state_message",
        "webex.default.message",
        "wechat.default.agent_id",
        "wechat.default.message",
        "wechat.default.to_party",
        "wechat.default.to_tag",
        "wechat.default.to_user",
    }
)


@dataclass(frozen=True)
class TemplateLimits:
    """What a tenant's templates may cost (settings TENANTPLANE_ALERTING_MAX_TEMPLATE_*)."""

    max_file_bytes: int = MAX_TEMPLATE_BYTES
    max_files: int = 100
    # Template invocations one invocation may lead to, itself included.
    max_invocations: int = 1000
    # Bytes of literal text one invocation may write (data it prints comes on top).
    max_expansion_bytes: int = 4 * 1024 * 1024
    # The cost model's bound for a receiver field (template_subset.py), evaluated at a
    # reference notification: N alerts, K pairs per label set, S bytes per string.
    reference_alerts: int = 100
    reference_pairs: int = 32
    reference_string_bytes: int = 512
    max_output_bytes: int = 16 * 1024 * 1024
    max_steps: int = 64 * 1024 * 1024


@dataclass(frozen=True)
class Cost:
    invocations: int
    text_bytes: int


# Definitions of one name, each with the field path of the file that holds it.
Definitions = dict[str, list[tuple[Body, str]]]


def parse_files(files: Mapping[str, Any], limits: TemplateLimits) -> dict[str, Outline]:
    """Each file's outline, keyed by the field path of its contents (syntax checked)."""
    if len(files) > limits.max_files:
        raise ConfigError(
            f"a configuration has at most {limits.max_files} template files",
            "templates",
            "TOO_MANY_TEMPLATES",
        )
    outlines: dict[str, Outline] = {}
    for filename, contents in files.items():
        path = join("templates", filename)
        try:
            outlines[path] = check_template(contents, limits.max_file_bytes)
        except TemplateLimitError as exc:
            raise ConfigError(f"template {filename}: {exc}", path, exc.code) from None
        except TemplateSyntaxError as exc:
            raise ConfigError(f"template {filename}: {exc}", path, "INVALID_TEMPLATE") from None
    return outlines


def templated_fields(receivers: list[Any]) -> Iterator[tuple[str, Outline]]:
    """Receivers' string fields that Alertmanager would execute as templates.

    A field that does not parse is skipped: Alertmanager fails to execute it, so it
    invokes nothing.
    """
    pending: list[tuple[Any, str]] = [
        (receiver, join("receivers", index)) for index, receiver in enumerate(receivers)
    ]
    while pending:
        value, path = pending.pop()
        if isinstance(value, dict):
            pending.extend((item, join(path, key)) for key, item in value.items())
        elif isinstance(value, list):
            pending.extend((item, join(path, index)) for index, item in enumerate(value))
        elif isinstance(value, str) and "{{" in value:
            try:
                yield path, check_template(value)
            except TemplateSyntaxError:
                continue


def check_template_set(
    files: Mapping[str, Outline],
    fields: Iterable[tuple[str, Outline]],
    limits: TemplateLimits,
) -> None:
    definitions: Definitions = {}
    for path, outline in files.items():
        for name, body in outline.definitions:
            definitions.setdefault(name, []).append((body, path))
    for path, outline in files.items():
        for body in (outline.top, *(body for _, body in outline.definitions)):
            _check_calls(body, path, definitions)
    costs = _costs(definitions, limits)
    for name, cost in costs.items():
        _check_cost(name, cost, definitions[name][0][1], limits)
    fields = list(fields)
    for path, outline in fields:
        local = dict(definitions)
        for name, body in outline.definitions:
            local[name] = [(body, path)]  # a field's own definitions apply to it alone
        for body in (outline.top, *(body for _, body in outline.definitions)):
            _check_calls(body, path, local)
        field_costs = _costs(local, limits) if outline.definitions else costs
        _check_cost("", _body_cost(outline.top, field_costs, limits), path, limits)
    check_subset(files, fields, limits)


def _check_calls(body: Body, path: str, definitions: Definitions) -> None:
    for name in body.calls:
        if name not in definitions and name not in BUILTIN_TEMPLATES:
            raise ConfigError(
                f'template "{name}" is neither defined in this configuration\'s templates '
                "nor one of Alertmanager's built-in templates",
                path,
                "UNKNOWN_TEMPLATE",
            )


def _check_cost(name: str, cost: Cost, path: str, limits: TemplateLimits) -> None:
    what = f'template "{name}"' if name else "this field"
    if cost.invocations > limits.max_invocations:
        raise ConfigError(
            f"{what} may lead to more than {limits.max_invocations} template invocations "
            "(each call counted, calls followed)",
            path,
            "TEMPLATE_TOO_COSTLY",
        )
    if cost.text_bytes > limits.max_expansion_bytes:
        raise ConfigError(
            f"{what} may write more than {limits.max_expansion_bytes} bytes of text "
            "(each call counted, calls followed)",
            path,
            "TEMPLATE_TOO_COSTLY",
        )


def _body_cost(body: Body, costs: Mapping[str, Cost], limits: TemplateLimits) -> Cost:
    """One execution of ``body``: itself and what its calls lead to (built-ins count one).
    Sums are capped just past the limits, so that no number grows beyond need."""
    invocations, text_bytes = 1, body.text_bytes
    for name in body.calls:
        callee = costs.get(name, Cost(1, 0))
        invocations = min(invocations + callee.invocations, limits.max_invocations + 1)
        text_bytes = min(text_bytes + callee.text_bytes, limits.max_expansion_bytes + 1)
    return Cost(invocations, text_bytes)


def _costs(definitions: Definitions, limits: TemplateLimits) -> dict[str, Cost]:
    """Worst-case cost of invoking each defined template (the costliest of its
    definitions), following calls depth first; a call back into the path is recursion."""
    costs: dict[str, Cost] = {}
    for root in definitions:
        if root in costs:
            continue
        stack = [(root, iter(_callees(definitions[root])))]
        on_path = {root}
        while stack:
            name, callees = stack[-1]
            for callee in callees:
                if callee in on_path:
                    raise ConfigError(
                        f'template "{callee}" invokes itself (through "{name}"): templates '
                        "must not be recursive",
                        definitions[callee][0][1],
                        "TEMPLATE_RECURSIVE",
                    )
                if callee in definitions and callee not in costs:
                    stack.append((callee, iter(_callees(definitions[callee]))))
                    on_path.add(callee)
                    break
            else:
                stack.pop()
                on_path.discard(name)
                costs[name] = max(
                    (_body_cost(body, costs, limits) for body, _ in definitions[name]),
                    key=lambda cost: (cost.invocations, cost.text_bytes),
                )
    return costs


def _callees(bodies: list[tuple[Body, str]]) -> list[str]:
    return list(dict.fromkeys(name for body, _ in bodies for name in body.calls))
