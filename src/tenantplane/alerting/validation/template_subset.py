"""A configuration's templates against the subset and its cost model.

Every template file and every templated receiver field must be in the subset
(template_tree.py; otherwise `TEMPLATE_NOT_ALLOWED`). Each receiver field is then costed
as Alertmanager executes it, with the notification as its dot, following the templates
it invokes (template_cost.py); its bound, evaluated at the reference notification of
TemplateLimits, must stay within the limits on output bytes and execution steps
(otherwise `TEMPLATE_TOO_COSTLY`). A define no field invokes is never executed, so only
its grammar is checked.

Alertmanager's built-in templates (a copy of Debian's 0.25 default.tmpl and email.tmpl in
builtin/, compared with the installed files by a test) are trusted: costed by the same
model, not restricted to the subset.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from tenantplane.alerting.validation.errors import ConfigError
from tenantplane.alerting.validation.gotemplate import Outline, check_template
from tenantplane.alerting.validation.template_cost import DATA, Budget, Cost, Evaluator, Type
from tenantplane.alerting.validation.template_poly import BoundTooLarge, Poly
from tenantplane.alerting.validation.template_tree import Node, NotAllowed, Tree, build_tree

if TYPE_CHECKING:
    from tenantplane.alerting.validation.templates import TemplateLimits

BUILTIN_DIR = Path(__file__).parent / "builtin"
# The one field Alertmanager 0.25 executes with html/template (ExecuteHTMLString).
_HTML_FIELD = re.compile(r"\.email_configs\[\d+\]\.html$")
# A define's bodies, each with the field path of the file (or field) that holds it.
Bodies = dict[str, list[tuple[list[Node], str]]]


class _Refused(Exception):
    def __init__(self, error: ConfigError) -> None:
        self.error = error


@cache
def builtin_bodies() -> Bodies:
    bodies: Bodies = {}
    for path in sorted(BUILTIN_DIR.glob("*.tmpl")):
        tree = build_tree(check_template(path.read_text(encoding="utf-8")), trusted=True)
        for name, definitions in tree.definitions.items():
            bodies.setdefault(name, []).extend((body, "") for body in definitions)
    return bodies


def check_subset(
    files: Mapping[str, Outline], fields: list[tuple[str, Outline]], limits: TemplateLimits
) -> None:
    bodies: Bodies = {}
    for path, outline in files.items():
        filename = path.split(".", 1)[1] if "." in path else path
        tree = _tree(outline, path, f"template {filename}: ")
        for name, definitions in tree.definitions.items():
            bodies.setdefault(name, []).extend((body, path) for body in definitions)
    for path, outline in fields:
        tree = _tree(outline, path, "")
        local = dict(bodies)
        for name, definitions in tree.definitions.items():
            local[name] = [(body, path) for body in definitions]
        cost = _field_cost(tree.top, path, local, html=bool(_HTML_FIELD.search(path)))
        if not _builtin_alone(tree.top, local):
            _within_limits(cost, path, limits)


def _builtin_alone(nodes: list[Node], bodies: Bodies) -> bool:
    """A field that only invokes one of Alertmanager's templates with the notification
    (`{{ template "email.default.html" . }}`, at most two bytes of text around it). It
    costs what Alertmanager's own defaults cost (an email whose `html` is left unset
    renders exactly that), which a tenant causes anyway, whatever its bound at the
    reference notification."""
    calls = [node for node in nodes if node.kind != "text"]
    blank = all(node.size <= 2 for node in nodes if node.kind == "text")
    if len(calls) != 1 or not blank or calls[0].kind != "template":
        return False
    call = calls[0]
    passes_dot = call.pipe is not None and [[o.kind for o in c] for c in call.pipe.commands] == [
        ["dot"]
    ]
    return passes_dot and call.name not in bodies and call.name in builtin_bodies()


def _tree(outline: Outline, path: str, prefix: str) -> Tree:
    try:
        return build_tree(outline)
    except NotAllowed as exc:
        raise ConfigError(f"{prefix}{exc}", path, "TEMPLATE_NOT_ALLOWED") from None


@dataclass
class _Costing:
    bodies: Bodies
    memo: dict[tuple[str, Type], Cost]
    budget: Budget
    html: bool

    def invoke(self, name: str, dot: Type) -> Cost:
        key = (name, dot)
        if key not in self.memo:
            found = self.bodies.get(name) or builtin_bodies().get(name, [])
            total = Cost()
            for body, path in found:
                evaluator = Evaluator(self.invoke, self.budget, trusted=not path, html=self.html)
                try:
                    output = evaluator.nodes(body, dot, {"$": dot})
                except NotAllowed as exc:
                    raise _Refused(
                        ConfigError(
                            f'template "{name}": {exc}', path or "templates", "TEMPLATE_NOT_ALLOWED"
                        )
                    ) from None
                total = total + Cost(output, evaluator.steps)
            self.memo[key] = total
        return self.memo[key]


def field_bound(nodes: list[Node], bodies: Bodies, *, html: bool = False) -> Cost:
    """Bytes and steps one execution of ``nodes`` with a notification as dot may take."""
    costing = _Costing(bodies, {}, Budget(), html)
    evaluator = Evaluator(costing.invoke, costing.budget, html=html)
    output = evaluator.nodes(nodes, DATA, {"$": DATA})
    return Cost(output, evaluator.steps)


def _field_cost(nodes: list[Node], path: str, bodies: Bodies, *, html: bool) -> Cost:
    try:
        return field_bound(nodes, bodies, html=html)
    except _Refused as refused:
        raise refused.error from None
    except NotAllowed as exc:
        raise ConfigError(str(exc), path, "TEMPLATE_NOT_ALLOWED") from None
    except BoundTooLarge as exc:
        raise ConfigError(
            f"this field's cost grows too fast with the notification's size ({exc})",
            path,
            "TEMPLATE_TOO_COSTLY",
        ) from None


def _within_limits(cost: Cost, path: str, limits: TemplateLimits) -> None:
    at = (limits.reference_alerts, limits.reference_pairs, limits.reference_string_bytes)
    reference = (
        f"for a notification of N={at[0]} alerts, K={at[1]} pairs per label set and "
        f"S={at[2]} bytes per string"
    )
    checks: tuple[tuple[Poly, int, str], ...] = (
        (cost.output, limits.max_output_bytes, "bytes"),
        (cost.steps, limits.max_steps, "execution steps"),
    )
    for bound, limit, unit in checks:
        value = bound.at(*at)
        if value > limit:
            raise ConfigError(
                f"this field may take {value} {unit} {reference} (bound: {bound}); "
                f"at most {limit} are allowed",
                path,
                "TEMPLATE_TOO_COSTLY",
            )
