"""The lexer of Go text/template files as Alertmanager 0.25's Go parses them: the tokens
inside one action (quoting and escapes, numbers, fields, variables, keywords) and where an
action closes. gotemplate.py parses the tokens (block structure, variables, functions).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(
    r"[+-]?(0[xX][0-9a-fA-F_]+(\.[0-9a-fA-F_]*)?([pP][+-]?[0-9]+)?"
    r"|0[bB][01_]+|0[oO][0-7_]+|([0-9][0-9_]*)?\.?[0-9_]*([eE][+-]?[0-9]+)?)i?"
)
_KEYWORDS = frozenset(
    [
        "block",
        "break",
        "continue",
        "define",
        "else",
        "end",
        "if",
        "range",
        "template",
        "with",
        "nil",
        "true",
        "false",
    ]
)


class TemplateSyntaxError(ValueError):
    """Raised by the lexer and the parser alike (gotemplate.py prefixes the line)."""


@dataclass
class Token:
    kind: str  # ident, keyword, field, chain, var, string, number, char, pipe, lparen,
    # rparen, declare, assign, comma, dot, bool, nil
    text: str


def lex_action(body: str) -> list[Token]:
    """The tokens of one action's text (between its delimiters, trim markers removed)."""
    tokens: list[Token] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c in " \t\r\n":
            i += 1
        elif c == '"':
            j = i + 1
            while True:
                if j >= len(body) or body[j] == "\n":
                    raise TemplateSyntaxError("unterminated quoted string")
                if body[j] == "\\":
                    j += 2
                    continue
                if body[j] == '"':
                    break
                j += 1
            _check_escapes(body[i + 1 : j], quote='"')
            tokens.append(Token("string", body[i : j + 1]))
            i = j + 1
        elif c == "`":
            j = body.find("`", i + 1)
            if j < 0:
                raise TemplateSyntaxError("unterminated raw quoted string")
            tokens.append(Token("string", body[i : j + 1]))
            i = j + 1
        elif c == "'":
            j = i + 1
            while j < len(body) and body[j] != "'":
                if body[j] == "\n":
                    break
                j += 2 if body[j] == "\\" else 1
            if j >= len(body) or body[j] != "'":
                raise TemplateSyntaxError("unterminated character constant")
            inner = body[i + 1 : j]
            if not (len(inner) == 1 or (inner.startswith("\\") and len(inner) >= 2)):
                raise TemplateSyntaxError(f"malformed character constant: {body[i : j + 1]}")
            _check_escapes(inner, quote="'")
            tokens.append(Token("char", body[i : j + 1]))
            i = j + 1
        elif c == "|":
            tokens.append(Token("pipe", c))
            i += 1
        elif c == "(":
            tokens.append(Token("lparen", c))
            i += 1
        elif c == ")":
            tokens.append(Token("rparen", c))
            i += 1
        elif c == ",":
            tokens.append(Token("comma", c))
            i += 1
        elif body.startswith(":=", i):
            tokens.append(Token("declare", ":="))
            i += 2
        elif c == "=":
            tokens.append(Token("assign", "="))
            i += 1
        elif c == "$":
            match = re.compile(r"\$[A-Za-z0-9_]*").match(body, i)
            assert match is not None
            tokens.append(Token("var", match.group()))
            i = match.end()
            i = _fields(body, i, tokens)
        elif c == "." and (i + 1 >= len(body) or not body[i + 1].isdigit()):
            match = re.compile(r"(\.[A-Za-z0-9_]+)+").match(body, i)
            if match is None:
                tokens.append(Token("dot", "."))
                i += 1
            else:
                # Right after a parenthesized pipeline, fields apply to its value.
                chained = i > 0 and body[i - 1] == ")"
                tokens.append(Token("chain" if chained else "field", match.group()))
                i = match.end()
        elif c.isdigit() or (c in "+-." and i + 1 < len(body) and body[i + 1].isdigit()):
            match = _NUMBER.match(body, i)
            assert match is not None
            end = match.end()
            if end < len(body) and (body[end].isalnum() or body[end] == "_"):
                raise TemplateSyntaxError(f'bad number syntax: "{body[i : end + 1]}"')
            tokens.append(Token("number", body[i:end]))
            i = end
        elif c.isalpha() or c == "_":
            match = _IDENT.match(body, i)
            assert match is not None
            word = match.group()
            if word in ("true", "false"):
                kind = "bool"
            elif word == "nil":
                kind = "nil"
            elif word in _KEYWORDS:
                kind = "keyword"
            else:
                kind = "ident"
            tokens.append(Token(kind, word))
            i = match.end()
            i = _fields(body, i, tokens)
        else:
            raise TemplateSyntaxError(f"unrecognized character in action: {c!r}")
    return tokens


_SIMPLE_ESCAPES = frozenset("abfnrtv\\")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def _check_escapes(literal: str, *, quote: str) -> None:
    """Escapes Go's strconv.Unquote accepts in a quoted string or character constant."""
    i = 0
    while i < len(literal):
        if literal[i] != "\\":
            i += 1
            continue
        kind = literal[i + 1] if i + 1 < len(literal) else ""
        if kind in _SIMPLE_ESCAPES or kind == quote:
            i += 2
            continue
        width = {"x": 2, "u": 4, "U": 8}.get(kind)
        if width is not None:
            digits = literal[i + 2 : i + 2 + width]
            valid = len(digits) == width and all(d in _HEX_DIGITS for d in digits)
            value = int(digits, 16) if valid else 0
            if not valid or (kind != "x" and (value > 0x10FFFF or 0xD800 <= value <= 0xDFFF)):
                raise TemplateSyntaxError("invalid syntax")
            i += 2 + width
            continue
        octal = literal[i + 1 : i + 4]
        if len(octal) == 3 and all(d in "01234567" for d in octal) and int(octal, 8) <= 255:
            i += 4
            continue
        raise TemplateSyntaxError("invalid syntax")


def _fields(body: str, i: int, tokens: list[Token]) -> int:
    """Field chains directly after a variable or identifier (``$x.Foo``) stay one operand."""
    match = re.compile(r"(\.[A-Za-z0-9_]+)+").match(body, i)
    if match is not None:
        tokens[-1].text += match.group()
        return match.end()
    return i


def unquote(literal: str) -> str:
    """The value of a Go string literal whose escapes the lexer already checked."""
    if literal.startswith("`"):
        return literal[1:-1]
    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return literal
    return value if isinstance(value, str) else literal


def find_close(text: str, i: int) -> tuple[int, int]:
    """The index of the closing ``}}`` of the action starting at ``i``, skipping quotes."""
    while i < len(text):
        c = text[i]
        if text.startswith("}}", i):
            return i, 2
        if c == '"':
            j = i + 1
            while j < len(text) and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if j >= len(text) or text[j] != '"':
                raise TemplateSyntaxError("unterminated quoted string")
            i = j + 1
        elif c == "`":
            j = text.find("`", i + 1)
            if j < 0:
                raise TemplateSyntaxError("unterminated raw quoted string")
            i = j + 1
        elif c == "'":
            j = i + 1
            while j < len(text) and text[j] != "'" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if j >= len(text) or text[j] != "'":
                raise TemplateSyntaxError("unterminated character constant")
            i = j + 1
        else:
            i += 1
    raise TemplateSyntaxError("unclosed action")
