"""An upper bound on what executing a template in the subset costs per notification.

Alertmanager executes a receiver's field with the notification (template.Data) as its dot.
Each value a template can reach has a type here (the notification, the alert list, an
alert, a label set, its pairs, a list of strings, a string, another scalar) and each
string a size bound; the cost of executing a list of nodes is two polynomials in N, K, S
(template_poly.py): the bytes it writes and its execution steps (one per node, function
call and template invocation, plus every byte a function produces or reads, plus
program size * input size for a regular expression). `range` multiplies its body's
cost by the number of elements (N for alerts, K for pairs), so nested ranges multiply.

The rules (also in docs/alerting.md):
- literal text: its bytes; a string literal: its bytes; a string field of the data: S;
  any other scalar (number, boolean, time, nil) prints as at most SCALAR bytes (≤ S);
- toUpper/toLower/title: 3 * the input (an invalid UTF-8 byte becomes U+FFFD, 3 bytes);
  urlquery: 3 * its input; safeHtml: the input; join: n * (element + separator);
  print/println/printf: the sum of their operands, the format's text and one separator
  each (a verb whose type does not match prints `%!d(string=…)`: 32 more bytes);
  reReplaceAll: T + (T + 1) * (R + d * T) for input T and a replacement of R bytes with
  d `$` references (at most T + 1 matches, each replaced by at most R + d * T bytes);
- `if`/`with`: the condition, plus both branches (a sum bounds the larger);
- `range`: the pipeline, plus length * (body + 1 step), plus the `else` branch;
- `template "x" v`: one step plus the cost of x's body with v's type as its dot (when x
  is defined more than once, all its definitions summed, which bounds the costliest);
- in an email's `html` field (html/template), each printed value: HTML_FACTOR * its
  size + HTML_EXTRA.

A type error that Go would hit at run time (a field the data does not have, printing a
list, `range` over a string) is refused instead: it is outside the subset.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tenantplane.alerting.validation.goregex import check_go_regex
from tenantplane.alerting.validation.template_poly import (
    ONE,
    ZERO,
    BoundTooLarge,
    K,
    N,
    Poly,
    S,
    const,
)
from tenantplane.alerting.validation.template_tree import (
    Node,
    NotAllowed,
    Operand,
    Pipe,
    format_verbs,
)

SCALAR = 64  # bytes a number, boolean, time or nil prints as, at most
_MISMATCH = 32  # what fmt adds around a value whose type does not suit the verb


# html/template escapes each printed value for its context: at most 6 bytes per byte
# (`<` is `\u003c` in a script, `"` is `\&#34;` in an event handler), plus quotes or a
# `ZgotmplZ` placeholder, 10 bytes at most; counted with a margin as 8 and 16.
HTML_FACTOR = 8
HTML_EXTRA = 16


@dataclass(frozen=True)
class Type:
    # data, alerts, alert, kv, pairs, pair, strs, str, scalar, time, nil, opaque
    kind: str
    size: Poly = ZERO  # str: bytes; strs: bytes of each element
    length: Poly = ZERO  # alerts, pairs, strs, kv: elements


STR_S = Type("str", S)
SCALAR_T = Type("scalar")
NIL = Type("nil")
DATA = Type("data")
ALERTS = Type("alerts", length=N)
KV = Type("kv", length=K)
_FIELDS: dict[str, dict[str, Type]] = {
    "data": {
        **dict.fromkeys(("Receiver", "Status", "ExternalURL"), STR_S),
        "Alerts": ALERTS,
        **dict.fromkeys(("GroupLabels", "CommonLabels", "CommonAnnotations"), KV),
    },
    "alerts": {"Firing": ALERTS, "Resolved": ALERTS},
    "alert": {
        **dict.fromkeys(("Status", "GeneratorURL", "Fingerprint"), STR_S),
        **dict.fromkeys(("Labels", "Annotations"), KV),
        **dict.fromkeys(("StartsAt", "EndsAt"), Type("time")),
    },
    "kv": {
        "SortedPairs": Type("pairs", length=K),
        **dict.fromkeys(("Names", "Values"), Type("strs", S, K)),
    },
    "pairs": dict.fromkeys(("Names", "Values"), Type("strs", S, K)),
    "pair": dict.fromkeys(("Name", "Value"), STR_S),
}
_ELEMENTS = {"alerts": Type("alert"), "pairs": Type("pair"), "kv": STR_S}


@dataclass(frozen=True)
class Cost:
    output: Poly = ZERO  # bytes written
    steps: Poly = ZERO

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.output + other.output, self.steps + other.steps)


# The cost of invoking a template by name with a dot of some type.
Invoke = Callable[[str, Type], Cost]


def print_size(value: Type) -> Poly:
    if value.kind == "str":
        return value.size
    if value.kind in ("scalar", "time", "nil"):
        return const(SCALAR)
    raise NotAllowed(f"printing {_describe(value)} (print its fields instead)")


def _describe(value: Type) -> str:
    return {
        "data": "the notification",
        "alerts": "a list of alerts",
        "alert": "an alert",
        "kv": "a label set",
        "pairs": "a list of pairs",
        "pair": "a pair",
        "strs": "a list of strings",
        "opaque": "the result of and/or over values of different types",
    }.get(value.kind, value.kind)


# Nodes one field's check may visit, invocations followed. Memoised by the dot's type, an
# invocation is costed once per type, but types may differ at each of up to
# TENANTPLANE_ALERTING_MAX_TEMPLATE_INVOCATIONS call sites: this keeps the check itself
# cheap whatever the templates (email.default.html needs 110 visits; 256 types passed to
# a 30,000-node template took 160 s to cost without it).
MAX_VISITS = 50_000


@dataclass
class Budget:
    left: int = MAX_VISITS

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise BoundTooLarge(f"costing it would visit more than {MAX_VISITS} template nodes")


@dataclass
class Evaluator:
    invoke: Invoke
    budget: Budget
    steps: Poly = ZERO
    # Alertmanager's own templates: where Go would stop with an error (`range` over the
    # notification in __text_alert_list invoked with it), nothing more is written.
    trusted: bool = False
    # An email's `html` field, executed by html/template (so are the templates it invokes).
    html: bool = False

    def nodes(self, nodes: Sequence[Node], dot: Type, variables: dict[str, Type]) -> Poly:
        """Bytes ``nodes`` write; their steps accumulate in self.steps."""
        output = ZERO
        for node in nodes:
            try:
                output = output + self.node(node, dot, variables)
            except NotAllowed as exc:
                if node.line and not str(exc).startswith("line "):
                    raise NotAllowed(f"line {node.line}: {exc}") from None
                raise
        return output

    def node(self, node: Node, dot: Type, variables: dict[str, Type]) -> Poly:
        self.budget.spend()
        self.steps = self.steps + ONE
        if node.kind == "text":
            self.steps = self.steps + node.size
            return const(node.size)
        if node.kind == "template":
            argument = self.pipe(node.pipe, dot, variables) if node.pipe else NIL
            cost = self.invoke(node.name, argument)
            self.steps = self.steps + cost.steps
            return cost.output
        assert node.pipe is not None
        scope = dict(variables)
        if node.kind == "action":
            value = self.pipe(node.pipe, dot, variables)
            if node.pipe.declared:
                return ZERO
            size = print_size(value)
            if self.html:
                size = HTML_FACTOR * size + HTML_EXTRA
            self.steps = self.steps + size
            return size
        if node.kind == "range":
            value = self.pipe(node.pipe, dot, scope, declare=False)
            try:
                element, length, index = _iterate(value)
            except NotAllowed:
                if not self.trusted:
                    raise
                return ZERO
            for name, bound in zip(node.pipe.declared[::-1], (element, index), strict=False):
                scope[name] = bound
            before = self.steps
            self.steps = ZERO
            body = self.nodes(node.body, element, dict(scope))
            self.steps = before + length * (self.steps + ONE)
            return length * body + self.nodes(node.orelse, dot, dict(scope))
        value = self.pipe(node.pipe, dot, scope)
        inner = value if node.kind == "with" else dot
        return self.nodes(node.body, inner, dict(scope)) + self.nodes(node.orelse, dot, scope)

    def pipe(
        self, pipe: Pipe, dot: Type, variables: dict[str, Type], *, declare: bool = True
    ) -> Type:
        value: Type | None = None
        for command in pipe.commands:
            value = self.command(command, dot, variables, value)
        assert value is not None
        if declare and pipe.declared:
            variables[pipe.declared[0]] = value
        return value

    def command(
        self, command: list[Operand], dot: Type, variables: dict[str, Type], piped: Type | None
    ) -> Type:
        self.steps = self.steps + ONE
        first, rest = command[0], command[1:]
        arguments = [self.operand(o, dot, variables) for o in rest]
        if piped is not None:
            arguments.append(piped)
        if first.kind == "func":
            return self.call(first.text, arguments, rest)
        if first.kind in ("field", "var"):
            return self.chain(first, dot, variables, arguments)
        if arguments:
            raise NotAllowed("arguments given to a value that is not a function")
        return self.operand(first, dot, variables)

    def operand(self, operand: Operand, dot: Type, variables: dict[str, Type]) -> Type:
        if operand.kind == "sub":
            assert operand.pipe is not None
            value = self.pipe(operand.pipe, dot, variables)
            for name in operand.text.split(".")[1:]:
                value = _field(value, name, [])
            return value
        if operand.kind in ("field", "var"):
            return self.chain(operand, dot, variables, [])
        if operand.kind == "dot":
            return dot
        if operand.kind == "string":
            return Type("str", const(len(operand.text.encode("utf-8", "surrogatepass"))))
        if operand.kind == "nil":
            return NIL
        if operand.kind == "func":
            raise NotAllowed(f'function "{operand.text}" used as an argument')
        return SCALAR_T

    def chain(
        self, operand: Operand, dot: Type, variables: dict[str, Type], arguments: list[Type]
    ) -> Type:
        if operand.kind == "var":
            base, *names = operand.text.split(".")
            value = variables.get(base)
            if value is None:
                raise NotAllowed(f"variable {base} has no known type here")
        else:
            value, names = dot, operand.text.split(".")[1:]
        for position, name in enumerate(names):
            last = position == len(names) - 1
            value = _field(value, name, arguments if last else [])
        if not names and arguments:
            raise NotAllowed("arguments given to a value that is not a function")
        return value

    def call(self, name: str, arguments: list[Type], operands: list[Operand]) -> Type:
        result = _call(name, arguments, operands)
        work = sum((print_size(a) for a in arguments if _scalar(a)), ZERO)
        if result.kind == "str":
            work = work + result.size
        if name in ("match", "reReplaceAll"):
            program = check_go_regex(operands[0].text, anchored=False)  # checked before
            work = work + (program + 1) * (print_size(arguments[-1]) + ONE)
        self.steps = self.steps + work
        return result


def _scalar(value: Type) -> bool:
    return value.kind in ("str", "scalar", "time", "nil")


def _iterate(value: Type) -> tuple[Type, Poly, Type]:
    """Element type, number of elements and index type of what `range` goes over."""
    if value.kind == "nil":
        return NIL, ZERO, NIL  # Go stops: "range can't iterate over <nil>"
    if value.kind == "strs":
        return Type("str", value.size), value.length, SCALAR_T
    if value.kind in _ELEMENTS:
        return _ELEMENTS[value.kind], value.length, STR_S if value.kind == "kv" else SCALAR_T
    raise NotAllowed(f"range over {_describe(value)}")


def _field(value: Type, name: str, arguments: list[Type]) -> Type:
    if value.kind == "nil":
        return NIL  # Go prints <no value>
    if value.kind == "kv" and name == "Remove" and len(arguments) == 1:
        return value
    if value.kind == "time" and name == "Format" and len(arguments) == 1:
        # A layout element prints at most twice its own length (`1` → `12`); the year
        # may have more digits.
        return Type("str", 2 * print_size(arguments[0]) + 32)
    found = _FIELDS.get(value.kind, {}).get(name)
    if found is None and value.kind == "kv":
        found = STR_S  # a label by name
    if found is None or arguments:
        raise NotAllowed(f"field .{name} of {_describe(value)}")
    return found


def _call(name: str, arguments: list[Type], operands: list[Operand]) -> Type:
    count = len(arguments)
    fixed = {"not": 1, "len": 1, "index": 2, "join": 2, "match": 2, "reReplaceAll": 3}
    single = ("toUpper", "toLower", "title", "safeHtml")
    if (name in fixed and count != fixed[name]) or (name in single and count != 1):
        raise NotAllowed(f"{name} with {count} arguments")
    if name in ("and", "or"):
        kinds = {a.kind for a in arguments}
        if all(_scalar(a) for a in arguments):
            return Type("str", sum((print_size(a) for a in arguments), ZERO))
        return arguments[0] if len(kinds) == 1 else Type("opaque")
    if name in ("not", "eq", "ne", "lt", "le", "gt", "ge", "len", "match"):
        return SCALAR_T
    if name == "index":
        container = arguments[0]
        if container.kind in ("kv", "nil"):
            return STR_S if container.kind == "kv" else NIL
        if container.kind == "str":
            return SCALAR_T  # a byte
        if container.kind not in ("alerts", "pairs", "strs"):
            raise NotAllowed(f"index of {_describe(container)}")
        return _iterate(container)[0]
    if name in ("print", "println"):
        return Type("str", sum((print_size(a) + 1 for a in arguments), ONE))
    if name == "printf":
        layout = operands[0].text
        return Type("str", const(len(layout.encode())) + _printf(layout, arguments[1:]))
    if name == "urlquery":
        return Type("str", 3 * sum((print_size(a) + 1 for a in arguments), ZERO))
    if name in ("toUpper", "toLower", "title"):
        return Type("str", 3 * print_size(arguments[0]))
    if name == "safeHtml":
        return Type("str", print_size(arguments[0]))
    if name == "join":
        separator, items = print_size(arguments[0]), arguments[1]
        if items.kind != "strs":
            raise NotAllowed(f"join over {_describe(items)} (join takes a list of strings)")
        return Type("str", items.length * (items.size + separator))
    if name == "reReplaceAll":
        text = print_size(arguments[2])
        replacement = operands[1].text
        each = const(len(replacement.encode())) + replacement.count("$") * text
        return Type("str", text + (text + ONE) * each)
    if name == "stringSlice":
        size = sum((print_size(a) for a in arguments), ZERO)
        return Type("strs", size, const(count))
    raise NotAllowed(f'function "{name}" is outside the template subset')


def _printf(layout: str, arguments: list[Type]) -> Poly:
    size = ZERO
    for verb, argument in zip(format_verbs(layout), arguments, strict=True):
        fits = argument.kind == "str" and verb != "d"
        size = size + print_size(argument) + (0 if fits else _MISMATCH)
    return size
