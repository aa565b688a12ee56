"""Alertmanager's matcher syntax (pkg/labels/parse.go in Alertmanager 0.25)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tenantplane.alerting.validation.goregex import RegexBudget, check_go_regex

_MATCHER = re.compile(r"^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(=~|=|!=|!~)\s*(.*?)\s*$", re.DOTALL)
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


@dataclass(frozen=True)
class Matcher:
    name: str
    op: str
    value: str


def _split(text: str) -> list[str]:
    """Split on commas outside double quotes, exactly as Alertmanager's tokenizer does."""
    text = text.removeprefix("{").removesuffix("}")
    tokens: list[str] = []
    token: list[str] = []
    inside_quotes = False
    escaped = False
    for char in text:
        if char == "," and not inside_quotes:
            tokens.append("".join(token))
            token = []
            continue
        if char == '"':
            if not escaped:
                inside_quotes = not inside_quotes
            else:
                escaped = False
        elif char == "\\":
            escaped = not escaped
        else:
            escaped = False
        token.append(char)
    last = "".join(token).strip()
    if last:
        tokens.append(last)
    return tokens


def parse_matcher(text: str, budget: RegexBudget | None = None) -> Matcher:
    match = _MATCHER.match(text)
    if match is None:
        raise ValueError(f"bad matcher format: {text}")
    name, op, raw = match.group(1), match.group(2), match.group(3)
    expect_trailing_quote = raw.startswith('"')
    if expect_trailing_quote:
        raw = raw[1:]
    value: list[str] = []
    escaped = False
    last_byte = len(raw.encode()) - 1
    offset = 0  # Go ranges over bytes offsets; compare them, not character indexes
    for char in raw:
        index = offset
        offset += len(char.encode())
        if escaped:
            escaped = False
            if char == "n":
                value.append("\n")
            elif char in '"\\':
                value.append(char)
            else:
                value.append("\\" + char)
            continue
        if char == "\\":
            if index < last_byte:
                escaped = True
                continue
            value.append("\\")
        elif char == '"':
            if not expect_trailing_quote or index < last_byte:
                raise ValueError(f"matcher value contains unescaped double quote: {match.group(3)}")
            expect_trailing_quote = False
        else:
            value.append(char)
    if expect_trailing_quote:
        raise ValueError(f"matcher value contains unescaped double quote: {match.group(3)}")
    matcher = Matcher(name, op, "".join(value))
    if op in ("=~", "!~"):
        check_go_regex(matcher.value, budget)
    return matcher


def parse_matchers(text: str, budget: RegexBudget | None = None) -> list[Matcher]:
    """Every matcher in one `matchers` entry (several may be separated by commas)."""
    return [parse_matcher(token, budget) for token in _split(text)]
