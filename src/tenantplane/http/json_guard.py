"""Checks every JSON request body must pass before any route or model sees it.

Python's ``json`` accepts things the API never should: ``NaN`` and ``Infinity``, numbers
that overflow to ``inf`` or beyond 64 bits, lone UTF-16 surrogates (``"\\ud800"``) that no
database or encoder can store, and nesting deep enough to exhaust the recursion limit of
whatever walks the value next. Refusing them here, in one place, means no feature has to.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any

from tenantplane.http.errors import ApiError, ValidationFailed, field_path

# Deep enough for an alerting route tree at its own limit (32 levels, two JSON levels each).
MAX_DEPTH = 128
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_MAX_INT_DIGITS = 19  # beyond this an integer literal cannot fit in 64 bits

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class _Rejected:
    """Stands in for a number the parser met, so that the walk can name its field."""

    def __init__(self, code: str, reason: str) -> None:
        self.code = code
        self.reason = reason


def _constant(literal: str) -> _Rejected:
    return _Rejected("INVALID_NUMBER", f"{literal} is not a JSON number")


def _integer(literal: str) -> int | _Rejected:
    if len(literal.lstrip("-")) <= _MAX_INT_DIGITS:
        value = int(literal)
        if INT64_MIN <= value <= INT64_MAX:
            return value
    return _Rejected("NUMBER_OUT_OF_RANGE", "integer is outside the 64-bit signed range")


def _float(literal: str) -> float | _Rejected:
    value = float(literal)
    if math.isinf(value):
        return _Rejected("NUMBER_OUT_OF_RANGE", "number is too large for a 64-bit float")
    return value


def nesting_depth(text: str) -> int:
    """How deeply objects and arrays nest (``{}`` is 1), without parsing recursively."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    steps = (1 if bracket in "[{" else -1 for bracket in brackets)
    return max(accumulate(steps), default=0)


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationFailed(
            f"request body is not UTF-8 (invalid byte at offset {exc.start})",
            field=None,
            code="BODY_NOT_UTF8",
        ) from exc


def _walk(document: Any) -> None:
    """Raise for the first rejected number or string with a lone surrogate, by field."""
    stack: list[tuple[tuple[int | str, ...], Any]] = [((), document)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, _Rejected):
            name = field_path(path) or None
            raise ValidationFailed(f"{name or 'body'}: {value.reason}", field=name, code=value.code)
        if isinstance(value, str) and _SURROGATE.search(value):
            name = field_path(path) or None
            raise ValidationFailed(
                f"{name or 'body'}: string contains a lone UTF-16 surrogate",
                field=name,
                code="INVALID_UNICODE",
            )
        if isinstance(value, dict):
            for key, item in reversed(value.items()):
                if _SURROGATE.search(key):
                    raise ValidationFailed(
                        f"{field_path(path) or 'body'}: a key contains a lone UTF-16 surrogate",
                        field=field_path(path) or None,
                        code="INVALID_UNICODE",
                    )
                stack.append(((*path, key), item))
        elif isinstance(value, list):
            stack.extend(((*path, index), item) for index, item in reversed(list(enumerate(value))))


def check_json_body(raw: bytes) -> ApiError | None:
    """The error to answer for ``raw``, or None when it may go on to the route."""
    try:
        text = _decode(raw)
        if nesting_depth(text) > MAX_DEPTH:
            return ValidationFailed(
                f"request body nests objects and arrays deeper than {MAX_DEPTH} levels",
                field=None,
                code="BODY_TOO_DEEP",
            )
        try:
            document = json.loads(
                text, parse_constant=_constant, parse_int=_integer, parse_float=_float
            )
        except (ValueError, RecursionError):
            return ValidationFailed(
                "request body is not valid JSON", field=None, code="MALFORMED_JSON"
            )
        _walk(document)
    except ApiError as error:
        return error
    return None
