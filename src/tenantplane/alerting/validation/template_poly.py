"""Polynomials over the size of a notification, for the template cost model.

A bound is a polynomial with non-negative integer coefficients in three measures of the
data a notification renders (see template_cost.py and docs/alerting.md):

- N: the number of alerts;
- K: the most pairs in any one label or annotation set of the notification;
- S: the most bytes of any one string in it (64 at least: non-string values print as at
  most 64 bytes, and a missing label prints `<no value>`).

Non-negative coefficients make every bound monotone in N, K and S, so the sum of two
bounds bounds their maximum (both branches of an `if` are counted).
"""

from __future__ import annotations

from dataclasses import dataclass

# A bound beyond these is refused before it is evaluated: no accepted template comes near
# them, and they keep the arithmetic on the polynomials themselves small.
MAX_DEGREE = 8
MAX_COEFFICIENT = 1 << 62

Monomial = tuple[int, int, int]  # exponents of N, K, S


class BoundTooLarge(ValueError):
    pass


@dataclass(frozen=True)
class Poly:
    terms: tuple[tuple[Monomial, int], ...] = ()

    @staticmethod
    def of(terms: dict[Monomial, int]) -> Poly:
        for monomial, coefficient in terms.items():
            if sum(monomial) > MAX_DEGREE:
                raise BoundTooLarge(f"a cost growing like a polynomial of degree {sum(monomial)}")
            if coefficient > MAX_COEFFICIENT:
                raise BoundTooLarge("a cost factor beyond 2^62")
        return Poly(tuple(sorted((m, c) for m, c in terms.items() if c)))

    def __add__(self, other: Poly | int) -> Poly:
        other = const(other) if isinstance(other, int) else other
        terms = dict(self.terms)
        for monomial, coefficient in other.terms:
            terms[monomial] = terms.get(monomial, 0) + coefficient
        return Poly.of(terms)

    __radd__ = __add__

    def __mul__(self, other: Poly | int) -> Poly:
        other = const(other) if isinstance(other, int) else other
        terms: dict[Monomial, int] = {}
        for (a, b, c), x in self.terms:
            for (d, e, f), y in other.terms:
                key = (a + d, b + e, c + f)
                terms[key] = terms.get(key, 0) + x * y
        return Poly.of(terms)

    __rmul__ = __mul__

    def at(self, n: int, k: int, s: int) -> int:
        return sum(c * n**a * k**b * s**e for (a, b, e), c in self.terms)

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for monomial, coefficient in reversed(self.terms):
            factors = [
                name if power == 1 else f"{name}^{power}"
                for name, power in zip("NKS", monomial, strict=True)
                if power
            ]
            if coefficient != 1 or not factors:
                factors.insert(0, str(coefficient))
            parts.append("·".join(factors))
        return " + ".join(parts)


def const(value: int) -> Poly:
    return Poly.of({(0, 0, 0): value})


ZERO = Poly()
ONE = const(1)
N = Poly.of({(1, 0, 0): 1})
K = Poly.of({(0, 1, 0): 1})
S = Poly.of({(0, 0, 1): 1})
