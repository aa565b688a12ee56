"""The quantity grammar against Kubernetes' own examples.

Valid values come from the Kubernetes documentation ("Resource Management for Pods and
Containers": 128974848, 129e6, 129M, 128974848000m, 123Mi are roughly the same memory;
0.1 is 100m of CPU; 400m of memory is 0.4 bytes) and from the parse table of
k8s.io/apimachinery's quantity_test.go. Invalid values are that file's documented invalid
list (TestQuantityParse), plus a few malformed shapes the grammar excludes. Over HTTP, the
same table is run through POST /clusters in tests/cluster/test_create.py.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from tenantplane.cluster.quantity import (
    BYTE_UNIT,
    CPU_UNIT,
    QuantityError,
    parse_quantity,
    positive_amount,
)

# (input, value in base units)
VALID = [
    # kubernetes.io: memory examples that all mean about 129 MB
    ("128974848", Decimal(128974848)),
    ("129e6", Decimal(129_000_000)),
    ("129M", Decimal(129_000_000)),
    ("128974848000m", Decimal(128974848)),
    ("123Mi", Decimal(123 * 2**20)),
    # kubernetes.io: CPU
    ("0.1", Decimal("0.1")),
    ("100m", Decimal("0.1")),
    ("1", Decimal(1)),
    ("0.5", Decimal("0.5")),
    ("250m", Decimal("0.25")),
    # kubernetes.io: "400m of memory is 0.4 bytes"
    ("400m", Decimal("0.4")),
    ("64Mi", Decimal(64 * 2**20)),
    ("1Gi", Decimal(2**30)),
    # apimachinery quantity_test.go
    ("0", Decimal(0)),
    ("0n", Decimal(0)),
    ("0Ki", Decimal(0)),
    ("1.", Decimal(1)),
    ("1.G", Decimal(10**9)),
    (".001", Decimal("0.001")),
    (".0001k", Decimal("0.1")),
    ("1e3", Decimal(1000)),
    ("1E3", Decimal(1000)),
    ("1E", Decimal(10**18)),
    ("1e-3", Decimal("0.001")),
    ("1e+3", Decimal(1000)),
    ("5Ki", Decimal(5 * 1024)),
    ("1.5Gi", Decimal(3 * 2**29)),
    ("100.035k", Decimal(100035)),
    ("1n", Decimal("1e-9")),
    ("1u", Decimal("1e-6")),
    ("8Ei", Decimal(8 * 2**60)),
    ("+1", Decimal(1)),
    ("+1Mi", Decimal(2**20)),
]

INVALID = [
    # apimachinery quantity_test.go, TestQuantityParse's invalid list
    "1.1.M",
    "1+1.0M",
    "0.1mi",
    "0.1am",
    "aoeu",
    ".5i",
    "1i",
    "-3.01i",
    "-3.01e-",
    " 1",
    "1 ",
    # outside the grammar
    "",
    ".",
    "+",
    "1K",
    "1ki",
    "1KiB",
    "1Gb",
    "1 Gi",
    "Mi",
    "1e",
    "1e1.5",
    "1e3k",
    "1..5",
    "1,5",
    "0x10",
    "\uff11",  # a full-width digit one
    "Inf",
    "NaN",
]


@pytest.mark.parametrize(("text", "value"), VALID)
def test_kubernetes_examples_parse_to_their_value(text: str, value: Decimal) -> None:
    assert parse_quantity(text).value == value


@pytest.mark.parametrize("text", INVALID)
def test_malformed_quantities_are_rejected(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize("text", ["-1", "-100m", "-1Gi", "-0"])
def test_negative_quantities_are_rejected(text: str) -> None:
    with pytest.raises(QuantityError, match="negative"):
        parse_quantity(text)


def test_amounts_round_up_as_kubernetes_does() -> None:
    assert positive_amount("400m", BYTE_UNIT) == 1  # 0.4 bytes → 1 byte
    assert positive_amount("1.5m", CPU_UNIT) == 2
    assert positive_amount("0.1", CPU_UNIT) == 100
    assert positive_amount("129e6", BYTE_UNIT) == 129_000_000


def test_zero_and_overflowing_amounts_are_rejected() -> None:
    with pytest.raises(QuantityError, match="greater than zero"):
        positive_amount("0", BYTE_UNIT)
    with pytest.raises(QuantityError, match="too large"):
        positive_amount("9Ei", BYTE_UNIT)
    with pytest.raises(QuantityError, match="too large"):
        positive_amount("1e99999999999999999999", BYTE_UNIT)
    # A tiny positive value still rounds up to one unit.
    assert positive_amount("1e-99999999999999999999", BYTE_UNIT) == 1
