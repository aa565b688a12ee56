"""Kubernetes resource quantities, parsed exactly as the orchestrator parses them.

The grammar (k8s.io/apimachinery/pkg/api/resource, quantity.go)::

    <quantity>        ::= <signedNumber><suffix>
    <signedNumber>    ::= <number> | <sign><number>
    <sign>            ::= "+" | "-"
    <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
    <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
    <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
    <decimalExponent> ::= "e" <signedInteger> | "E" <signedInteger>

As in the reference implementation, exponents are integers, digits are ASCII, ``n`` and
``u`` are accepted, and no whitespace is allowed anywhere. On top of the grammar a cluster
resource must be positive (negative values and zero are rejected) and fit in 63 bits once
normalised to millicores or bytes, rounded up as Kubernetes rounds (``MilliValue``/``Value``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, localcontext

_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)"
    r"(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>[eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?"
)
_MULTIPLIERS: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
MAX_LENGTH = 64
MAX_INT64 = 2**63 - 1
# Beyond this exponent any non-zero value overflows 63 bits; below its negative, any
# non-zero value rounds up to one unit. Clamping keeps Decimal arithmetic cheap.
_EXPONENT_BOUND = 64


class QuantityError(ValueError):
    pass


@dataclass(frozen=True)
class Quantity:
    text: str
    value: Decimal  # in base units (cores, bytes)

    def scaled(self, unit: Decimal) -> int:
        """The value in ``unit``s, rounded up (1.5m CPU → 2 millicores)."""
        with localcontext() as context:
            context.prec = 80
            amount = (self.value / unit).to_integral_value(rounding=ROUND_CEILING)
        if amount > MAX_INT64:
            raise QuantityError("is too large")
        return int(amount)


def parse_quantity(text: str) -> Quantity:
    """Parse ``text`` or raise QuantityError saying why it is not a quantity."""
    if len(text) > MAX_LENGTH:
        raise QuantityError(f"must be at most {MAX_LENGTH} characters")
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise QuantityError("must be a Kubernetes quantity such as 500m, 2, 1.5, 4Gi, 10G or 1e3")
    if match["sign"] == "-":
        raise QuantityError("must not be negative")
    number = Decimal(match["number"])
    suffix = match["suffix"] or ""
    with localcontext() as context:
        context.prec = 80
        if suffix[:1] in {"e", "E"} and suffix not in _MULTIPLIERS:
            exponent = max(-_EXPONENT_BOUND, min(_EXPONENT_BOUND, int(suffix[1:])))
            value = number.scaleb(exponent)
        else:
            value = number * _MULTIPLIERS[suffix]
    return Quantity(text, value)


CPU_UNIT = Decimal("0.001")  # millicores
BYTE_UNIT = Decimal(1)


def positive_amount(text: str, unit: Decimal) -> int:
    """Parse a cluster resource and normalise it to ``unit``s; it must be above zero."""
    quantity = parse_quantity(text)
    if quantity.value <= 0:
        raise QuantityError("must be greater than zero")
    return quantity.scaled(unit)
