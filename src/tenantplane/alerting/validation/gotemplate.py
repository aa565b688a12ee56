"""Syntax of Go text/template files as Alertmanager 0.25 parses them (template.FromGlobs).

Checks what Go's parser checks before anything runs: delimiters, comments, quoting,
parentheses, block structure (if/range/with/define/block/else/end, break and continue),
declared variables, known function names (Go's built-ins and Alertmanager's), string names
of define/template/block, and duplicate non-empty definitions in one file. The tokens inside
each action come from template_lexer.py; this module finds the actions and parses them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# TemplateSyntaxError is what check_template raises: exported again here for its callers.
from tenantplane.alerting.validation.template_lexer import (
    TemplateSyntaxError as TemplateSyntaxError,
)
from tenantplane.alerting.validation.template_lexer import Token, find_close, lex_action, unquote

_GO_BUILTINS = (
    "and call html index slice js len not or print printf println urlquery eq ge gt le lt ne"
)
_ALERTMANAGER_FUNCS = "toUpper toLower title join match safeHtml reReplaceAll stringSlice"
FUNCTIONS = frozenset(_GO_BUILTINS.split()) | frozenset(_ALERTMANAGER_FUNCS.split())


# Stricter than Go (whose parser allows 10,000 levels): a template file is at most this
# many bytes of UTF-8, and parentheses or blocks (if/range/with/define/block) nest at most
# this deep. Both are checked before the parser works on the text, so that no file can
# cost more than a bounded amount of CPU to check.
MAX_TEMPLATE_BYTES = 256 * 1024
MAX_TEMPLATE_NESTING = 64


class TemplateLimitError(TemplateSyntaxError):
    """A template beyond a size or nesting limit (not a syntax error in Go's sense)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def _too_deep() -> TemplateLimitError:
    return TemplateLimitError(
        f"parentheses and blocks nest at most {MAX_TEMPLATE_NESTING} levels",
        "TEMPLATE_TOO_DEEP",
    )


@dataclass
class Body:
    """What one template does when it runs: the templates it invokes (each call site once,
    in order) and how many bytes of literal text it writes."""

    calls: list[str] = field(default_factory=list)
    text_bytes: int = 0


@dataclass
class Outline:
    """A parsed file: its top-level body and each `define`/`block` with its own body."""

    top: Body = field(default_factory=Body)
    definitions: list[tuple[str, Body]] = field(default_factory=list)
    # The file in order, for checks on its parsed tree (template_tree.py): literal text,
    # and each action's tokens with its line. Comments are left out.
    pieces: list[tuple[int, str | list[Token]]] = field(default_factory=list)


@dataclass
class _Frame:
    keyword: str
    variables: list[str]
    in_range: bool
    has_else: bool = False


@dataclass
class _Checker:
    frames: list[_Frame] = field(default_factory=list)
    definitions: set[str] = field(default_factory=set)
    # The open define's name and whether it has non-blank content so far.
    current_define: tuple[str, bool] | None = None
    outline: Outline = field(default_factory=Outline)
    # The body text and calls go to: the file's, then one per open define or block.
    bodies: list[Body] = field(default_factory=list)

    @property
    def body(self) -> Body:
        return self.bodies[-1] if self.bodies else self.outline.top

    def open_body(self, name: str) -> None:
        body = Body()
        self.outline.definitions.append((name, body))
        self.bodies.append(body)

    @property
    def variables(self) -> list[str]:
        return self.frames[-1].variables if self.frames else self.top_variables

    top_variables: list[str] = field(default_factory=lambda: ["$"])

    def in_range(self) -> bool:
        return bool(self.frames) and self.frames[-1].in_range

    def push(self, keyword: str) -> None:
        if len(self.frames) >= MAX_TEMPLATE_NESTING:
            raise _too_deep()
        in_range = keyword == "range" or self.in_range()
        if keyword in ("define", "block"):
            in_range = False
        self.frames.append(_Frame(keyword, list(self.variables), in_range))

    def action(self, tokens: list[Token]) -> None:
        if not tokens:
            raise TemplateSyntaxError("missing value for command")
        head = tokens[0]
        rest = tokens[1:]
        if head.text not in ("define", "end"):
            self.content("action")  # any action makes an open definition non-empty
        if head.kind != "keyword":
            self.pipeline(tokens, "command", declarations=True)
            return
        word = head.text
        if word in ("if", "with", "range"):
            self.control(word, rest)
        elif word == "else":
            self.else_(rest)
        elif word == "end":
            if rest:
                raise TemplateSyntaxError(f"unexpected {rest[0].text!r} in end")
            if not self.frames:
                raise TemplateSyntaxError("unexpected {{end}}")
            frame = self.frames.pop()
            if frame.keyword in ("define", "block"):
                self.bodies.pop()
            if frame.keyword == "define" and self.current_define is not None:
                self.finish_define()
        elif word in ("break", "continue"):
            if rest:
                raise TemplateSyntaxError(f"unexpected {rest[0].text!r} in {word}")
            if not self.in_range():
                raise TemplateSyntaxError(f"{{{{{word}}}}} outside {{{{range}}}}")
        elif word == "template":
            self.body.calls.append(self.named(rest, "template"))
        elif word == "block":
            name = self.named(rest, "block")
            self.body.calls.append(name)  # a block is a define invoked where it stands
            self.push("block")
            self.open_body(name)
        elif word == "define":
            if self.frames:
                raise TemplateSyntaxError("unexpected <define> in command")
            if len(rest) != 1 or rest[0].kind != "string":
                found = rest[0].text if rest else "}}"
                raise TemplateSyntaxError(f"unexpected {found!r} in define clause")
            self.frames.append(_Frame("define", ["$"], False))
            self.current_define = (rest[0].text, False)
            self.open_body(unquote(rest[0].text))

    def content(self, text: str) -> None:
        """Text or an action inside the open define makes the definition non-empty."""
        if self.current_define is not None and text.strip():
            self.current_define = (self.current_define[0], True)

    def finish_define(self) -> None:
        assert self.current_define is not None
        name, non_empty = self.current_define
        if non_empty:
            if name in self.definitions:
                raise TemplateSyntaxError(f"template: multiple definition of template {name}")
            self.definitions.add(name)
        self.current_define = None

    def control(self, word: str, rest: list[Token]) -> None:
        if not rest:
            raise TemplateSyntaxError(f"missing value for {word}")
        self.push(word)
        self.pipeline(rest, word, declarations=True, allow_two=word == "range")

    def else_(self, rest: list[Token]) -> None:
        if not self.frames or self.frames[-1].keyword not in ("if", "with", "range"):
            raise TemplateSyntaxError("unexpected {{else}}")
        frame = self.frames[-1]
        if frame.has_else:
            raise TemplateSyntaxError("expected end; found {{else}}")
        if rest:
            if rest[0].text != "if" or frame.keyword != "if":
                raise TemplateSyntaxError(f"unexpected {rest[0].text!r} in else")
            if len(rest) == 1:
                raise TemplateSyntaxError("missing value for if")
            self.pipeline(rest[1:], "if", declarations=True)
            return
        frame.has_else = True

    def named(self, rest: list[Token], context: str) -> str:
        """The template name of a `template` or `block` action (checked, unquoted)."""
        if not rest or rest[0].kind != "string":
            found = rest[0].text if rest else "}}"
            raise TemplateSyntaxError(f"unexpected {found!r} in {context} clause")
        if len(rest) > 1:
            self.pipeline(rest[1:], context, declarations=False)
        return unquote(rest[0].text)

    def text(self, text: str) -> None:
        if text:
            self.outline.pieces.append((0, text))
        self.content(text)
        self.body.text_bytes += len(text.encode("utf-8", "surrogatepass"))

    def pipeline(
        self,
        tokens: list[Token],
        context: str,
        *,
        declarations: bool,
        allow_two: bool = False,
    ) -> None:
        declared = self.declaration(tokens, allow_two) if declarations else []
        body = tokens[2 * len(declared) :] if declared else tokens
        if declared and not body:
            raise TemplateSyntaxError(f"missing value for {context}")
        # Go declares the variables before it parses the pipeline's commands.
        self.variables.extend(name for name, is_new in declared if is_new)
        self.commands(body, context)

    def declaration(self, tokens: list[Token], allow_two: bool) -> list[tuple[str, bool]]:
        """`$x :=`, `$x =` or (in range) `$i, $v :=` at the start of a pipeline."""
        if len(tokens) >= 2 and tokens[0].kind == "var" and "." not in tokens[0].text:
            if tokens[1].kind == "declare":
                return [(tokens[0].text, True)]
            if tokens[1].kind == "assign":
                return [(tokens[0].text, True)]  # Go's parser declares on `=` as well
            if (
                allow_two
                and tokens[1].kind == "comma"
                and len(tokens) >= 4
                and tokens[2].kind == "var"
                and tokens[3].kind in ("declare", "assign")
            ):
                return [(tokens[0].text, True), (tokens[2].text, True)]
        return []

    def use_variable(self, text: str) -> None:
        name = text.split(".")[0]
        if name not in self.variables:
            raise TemplateSyntaxError(f'undefined variable "{name}"')

    def commands(self, tokens: list[Token], context: str) -> None:
        """A pipeline: its parentheses matched once, then each level visited once."""
        self._commands(tokens, _match_parens(tokens), 0, len(tokens))

    def _commands(self, tokens: list[Token], match: dict[int, int], start: int, end: int) -> None:
        stages: list[tuple[int, int]] = []
        stage_start = i = start
        while i < end:
            if tokens[i].kind == "lparen":
                i = match[i] + 1
                continue
            if tokens[i].kind == "pipe":
                stages.append((stage_start, i))
                stage_start = i + 1
            i += 1
        stages.append((stage_start, end))
        for index, (first, last) in enumerate(stages):
            if first == last:
                if index == len(stages) - 1 and index > 0:
                    continue  # Go 1.19 accepts a trailing '|'
                raise TemplateSyntaxError("missing value for command")
            if index > 0 and tokens[first].kind in ("bool", "dot", "nil", "number", "string"):
                raise TemplateSyntaxError(f"non executable command in pipeline stage {index + 1}")
            self.command(tokens, match, first, last)

    def command(self, tokens: list[Token], match: dict[int, int], start: int, end: int) -> None:
        i = start
        while i < end:
            token = tokens[i]
            if token.kind == "lparen":
                close = match[i]
                if close == i + 1:
                    raise TemplateSyntaxError("missing value for parenthesized pipeline")
                self._commands(tokens, match, i + 1, close)
                i = close + 1
                continue
            if token.kind == "ident":
                name = token.text.split(".")[0]
                if name not in FUNCTIONS:
                    raise TemplateSyntaxError(f'function "{name}" not defined')
            elif token.kind == "var":
                self.use_variable(token.text)
            elif token.kind in ("keyword", "declare", "assign", "comma", "pipe", "rparen"):
                raise TemplateSyntaxError(f"unexpected {token.text!r} in command")
            i += 1


def _match_parens(tokens: list[Token]) -> dict[int, int]:
    """Index of each left paren's right paren; unbalanced or too deep pipelines raise."""
    match: dict[int, int] = {}
    open_parens: list[int] = []
    for index, token in enumerate(tokens):
        if token.kind == "lparen":
            if len(open_parens) >= MAX_TEMPLATE_NESTING:
                raise _too_deep()
            open_parens.append(index)
        elif token.kind == "rparen":
            if not open_parens:
                raise TemplateSyntaxError("unexpected right paren")
            match[open_parens.pop()] = index
    if open_parens:
        raise TemplateSyntaxError("unclosed left paren")
    return match


def check_template(text: str, max_bytes: int = MAX_TEMPLATE_BYTES) -> Outline:
    """Raise TemplateSyntaxError (with Go's wording where practical) for a template file;
    otherwise return its outline (definitions, calls, literal text)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise TemplateLimitError(
            f"a template file is at most {max_bytes} bytes (this one: {size})",
            "TEMPLATE_TOO_LARGE",
        )
    checker = _Checker()
    position = 0
    line = 1
    try:
        while True:
            start = text.find("{{", position)
            if start < 0:
                checker.text(text[position:])
                break
            checker.text(text[position:start])
            line += text.count("\n", position, start)
            inner_start = start + 2
            if (
                text.startswith("- ", inner_start)
                or text.startswith("-\t", inner_start)
                or text.startswith("-\n", inner_start)
                or text.startswith("-\r", inner_start)
            ):
                inner_start += 2
            if text.startswith("/*", inner_start):
                end_comment = text.find("*/", inner_start + 2)
                if end_comment < 0:
                    raise TemplateSyntaxError("unclosed comment")
                after = end_comment + 2
                if text.startswith(" -}}", after):
                    after += 4
                elif text.startswith("}}", after):
                    after += 2
                else:
                    raise TemplateSyntaxError("comment ends before closing delimiter")
                line += text.count("\n", start, after)
                position = after
                continue
            end, close_len = find_close(text, inner_start)
            body = text[inner_start:end]
            trimmed_body = body[:-2] if body.endswith((" -", "\t-", "\n-", "\r-")) else body
            tokens = lex_action(trimmed_body)
            checker.outline.pieces.append((line, tokens))
            checker.action(tokens)
            line += text.count("\n", start, end + close_len)
            position = end + close_len
        if checker.frames:
            raise TemplateSyntaxError("unexpected EOF")
    except TemplateLimitError as exc:
        raise TemplateLimitError(f"line {line}: {exc}", exc.code) from None
    except TemplateSyntaxError as exc:
        raise TemplateSyntaxError(f"line {line}: {exc}") from None
    return checker.outline
