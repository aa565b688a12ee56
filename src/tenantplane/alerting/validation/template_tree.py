"""The parsed tree of a template, restricted to the subset tenants may use.

gotemplate.py checks a file's syntax as Go does; this module builds the tree of what
checked: actions, `if`/`with`/`range` with their bodies, `template`/`block` calls and
`define`s, and each pipeline's commands and operands. While building it, it refuses
every construct outside the subset (docs/alerting.md, "What invoking a template may
cost"), whose cost template_cost.py bounds:

- functions: only those in ALLOWED_FUNCTIONS (`call`, `html`, `js`, `slice` are out);
- `printf`: the format is a string literal whose verbs are `%s`, `%v`, `%d` or `%%`, with
  no flags, widths, precisions or argument indexes, and one argument per verb;
- `match` and `reReplaceAll`: the expression (and replacement) are string literals, and
  the expression compiles as Go's regexp/syntax would (goregex.py);
- variables: declared with `:=`, never reassigned with `=` (a reassignment inside `range`
  carries a value from one iteration to the next, so its size can double per alert);
- a field follows a variable, the dot, a field or parentheses, never a function name.

The file's text was checked by gotemplate.check_template first, so the structure here
(blocks closed, parentheses matched) is taken as given.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tenantplane.alerting.validation.goregex import RegexError, check_go_regex
from tenantplane.alerting.validation.gotemplate import Outline
from tenantplane.alerting.validation.template_lexer import Token, unquote

ALLOWED_FUNCTIONS = frozenset(
    (
        *("and", "or", "not", "eq", "ne", "lt", "le", "gt", "ge", "len", "index"),
        *("print", "printf", "println", "urlquery"),
        *("toUpper", "toLower", "title", "join", "match", "reReplaceAll", "safeHtml"),
        "stringSlice",
    )
)
# Functions whose first operands must be string literals (how many).
_LITERAL_OPERANDS = {"printf": 1, "match": 1, "reReplaceAll": 2}


class NotAllowed(ValueError):
    """A construct outside the subset; the message names it (with its line)."""


@dataclass
class Operand:
    # func (text: name), field (text: ".A.B" from the dot), var ("$x.A"), dot, string
    # (text: unquoted value), number, char, bool, nil, sub (pipe: a parenthesized pipeline;
    # text: the fields that follow it, if any)
    kind: str
    text: str = ""
    pipe: Pipe | None = None


@dataclass
class Pipe:
    declared: list[str]
    commands: list[list[Operand]]


@dataclass
class Node:
    # text (size: bytes), action (pipe), if / with / range (pipe, body, orelse),
    # template (name, pipe or None)
    kind: str
    line: int = 0
    size: int = 0
    name: str = ""
    pipe: Pipe | None = None
    body: list[Node] = field(default_factory=list)
    orelse: list[Node] = field(default_factory=list)


@dataclass
class Tree:
    """A file or field: its top-level nodes and each define (or block) by name; a name
    defined twice in one file keeps both bodies (the costlier one counts)."""

    top: list[Node] = field(default_factory=list)
    definitions: dict[str, list[list[Node]]] = field(default_factory=dict)


@dataclass
class _Open:
    node: Node | None  # None: a define
    in_else: bool = False
    closes: int = 1  # an `else if` chain closes with the `end` of its first `if`


def build_tree(outline: Outline, *, trusted: bool = False) -> Tree:
    """The tree of a checked file; NotAllowed for constructs outside the subset unless
    ``trusted`` (Alertmanager's own templates, which are costed but not restricted)."""
    tree = Tree()
    lists: list[list[Node]] = [tree.top]
    opened: list[_Open] = []
    for line, piece in outline.pieces:
        if isinstance(piece, str):
            lists[-1].append(Node("text", size=len(piece.encode("utf-8", "surrogatepass"))))
            continue
        try:
            _action(piece, line, tree, lists, opened, trusted)
        except NotAllowed as exc:
            raise NotAllowed(f"line {line}: {exc}") from None
    return tree


def _action(
    tokens: list[Token],
    line: int,
    tree: Tree,
    lists: list[list[Node]],
    opened: list[_Open],
    trusted: bool,
) -> None:
    head, rest = tokens[0], tokens[1:]
    word = head.text if head.kind == "keyword" else ""
    if word in ("if", "with", "range"):
        node = Node(word, line, pipe=parse_pipe(rest, trusted))
        lists[-1].append(node)
        opened.append(_Open(node))
        lists.append(node.body)
    elif word == "else":
        frame = opened[-1]
        assert frame.node is not None
        lists.pop()
        frame.in_else = True
        lists.append(frame.node.orelse)
        if rest:  # else if: an if inside the else branch, closed by the same end
            node = Node("if", line, pipe=parse_pipe(rest[1:], trusted))
            lists[-1].append(node)
            opened.append(_Open(node, closes=0))
            lists.append(node.body)
    elif word == "end":
        while True:
            frame = opened.pop()
            lists.pop()
            if frame.closes:
                break
    elif word in ("template", "block"):
        name = unquote(rest[0].text)
        pipe = parse_pipe(rest[1:], trusted) if len(rest) > 1 else None
        lists[-1].append(Node("template", line, name=name, pipe=pipe))
        if word == "block":
            body: list[Node] = []
            tree.definitions.setdefault(name, []).append(body)
            opened.append(_Open(None))
            lists.append(body)
    elif word == "define":
        body = []
        tree.definitions.setdefault(unquote(rest[0].text), []).append(body)
        opened.append(_Open(None))
        lists.append(body)
    elif word in ("break", "continue"):
        return  # they only end an iteration early: the bound without them holds
    else:
        lists[-1].append(Node("action", line, pipe=parse_pipe(tokens, trusted)))


def parse_pipe(tokens: list[Token], trusted: bool = False) -> Pipe:
    declared: list[str] = []
    if len(tokens) >= 2 and tokens[0].kind == "var" and "." not in tokens[0].text:
        shape = [t.kind for t in tokens[:4]]
        if shape[1] in ("declare", "assign"):
            declared, assign, tokens = [tokens[0].text], shape[1] == "assign", tokens[2:]
        elif shape[1:4] in (["comma", "var", "declare"], ["comma", "var", "assign"]):
            declared, assign = [tokens[0].text, tokens[2].text], shape[3] == "assign"
            tokens = tokens[4:]
        else:
            assign = False
        if assign:
            raise NotAllowed(
                f"assignment to {declared[-1]} with '=' (declare a new variable with ':=')"
            )
    commands: list[list[Operand]] = []
    current: list[Operand] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.kind == "pipe":
            commands.append(current)
            current = []
        elif token.kind == "lparen":
            close = _close(tokens, i)
            sub = Operand("sub", pipe=parse_pipe(tokens[i + 1 : close], trusted))
            if close + 1 < len(tokens) and tokens[close + 1].kind == "chain":
                close += 1  # `(index .Alerts 0).Labels`: fields of the pipeline's value
                sub.text = tokens[close].text
            current.append(sub)
            i = close
        else:
            current.append(_operand(token))
        i += 1
    if current:
        commands.append(current)
    if not trusted:
        for index, command in enumerate(commands):
            _check_command(command, piped=index > 0)
    return Pipe(declared, commands)


def _close(tokens: list[Token], start: int) -> int:
    depth = 0
    for index in range(start, len(tokens)):
        depth += {"lparen": 1, "rparen": -1}.get(tokens[index].kind, 0)
        if depth == 0:
            return index
    raise AssertionError("parentheses were matched by the syntax check")


def _operand(token: Token) -> Operand:
    if token.kind == "ident":
        if "." in token.text:
            raise NotAllowed(f"a field of a function's result ({token.text})")
        return Operand("func", token.text)
    if token.kind == "string":
        return Operand("string", unquote(token.text))
    return Operand(token.kind, token.text)


def _check_command(command: list[Operand], *, piped: bool) -> None:
    for operand in command:
        if operand.kind == "func" and operand.text not in ALLOWED_FUNCTIONS:
            raise NotAllowed(f'function "{operand.text}" is outside the template subset')
    first = command[0]
    if first.kind != "func":
        return
    literals = _LITERAL_OPERANDS.get(first.text, 0)
    operands = command[1 : 1 + literals]
    if len(operands) < literals or any(o.kind != "string" for o in operands):
        what = "format" if first.text == "printf" else "regular expression and replacement"
        raise NotAllowed(f"{first.text}: the {what} must be string literals")
    if first.text == "printf":
        verbs = format_verbs(operands[0].text)
        if len(command) - 2 + piped != len(verbs):
            raise NotAllowed(f"printf with {len(verbs)} verbs takes as many arguments")
    elif literals:
        try:
            check_go_regex(operands[0].text, anchored=False)
        except RegexError as exc:
            raise NotAllowed(f"{first.text}: invalid regular expression: {exc}") from None


def format_verbs(layout: str) -> list[str]:
    """The verbs of a printf format (without `%%`); NotAllowed for any other verb or for
    flags, widths, precisions and argument indexes."""
    verbs = []
    i = layout.find("%")
    while i >= 0:
        verb = layout[i + 1 : i + 2]
        if not verb or verb not in "svd%":
            raise NotAllowed(
                f"printf verb %{verb}: only %s, %v, %d and %% (without flags, widths or "
                "precisions) are in the template subset"
            )
        if verb != "%":
            verbs.append(verb)
        i = layout.find("%", i + 2)
    return verbs
