"""Usage from cluster history, and the line items priced from it.

A ``cluster_history`` row is a full snapshot valid from its ``at`` until the next row of the
same cluster. Over a billing period [start, end):

* a cluster is metered while its phase is Running or Upgrading (it serves its tenant);
  Pending, Provisioning and Terminating are free, and a Deleted row ends the cluster;
* resource-hours = sum of (interval in hours) * (vCPU, GiB memory, GiB storage) of the snapshot;
* the HA control plane is metered over the same intervals from ``ha_enabled_at`` on.

Arithmetic is exact (``Fraction``); each line's amount is rounded once, half up, to the
currency's minor unit, and the subtotal is the sum of the rounded lines.
"""

from __future__ import annotations

import calendar
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

from tenantplane.billing.pricing import PlanPrices
from tenantplane.cluster.models import ClusterHistory, ClusterPhase

METERED_PHASES = frozenset({ClusterPhase.running.value, ClusterPhase.upgrading.value})
GIB = 2**30
MICROSECONDS_PER_HOUR = 3_600_000_000
CENT = Decimal("0.01")
QUANTITY_PLACES = Decimal("0.000001")


def hours_between(start: datetime, end: datetime) -> Fraction:
    return Fraction((end - start) // timedelta(microseconds=1), MICROSECONDS_PER_HOUR)


def round_money(value: Fraction | Decimal) -> Decimal:
    """Half up to cents, exactly (a Fraction is never converted through a float)."""
    if isinstance(value, Decimal):
        return value.quantize(CENT, rounding=ROUND_HALF_UP)
    cents = value * 100
    sign = -1 if cents < 0 else 1
    whole = (abs(cents) + Fraction(1, 2)).__floor__()
    return (Decimal(sign * whole) / 100).quantize(CENT)


def round_quantity(value: Fraction) -> Decimal:
    """Quantities are shown with six decimals (display only: amounts use exact values)."""
    exact = Decimal(value.numerator) / Decimal(value.denominator)
    return exact.quantize(QUANTITY_PLACES, rounding=ROUND_HALF_UP)


def month_end(instant: datetime) -> datetime:
    """The first instant of the calendar month (UTC) after the one holding ``instant``."""
    instant = instant.astimezone(UTC)
    year, month = (
        (instant.year + 1, 1) if instant.month == 12 else (instant.year, instant.month + 1)
    )
    return datetime(year, month, 1, tzinfo=UTC)


def month_start(instant: datetime) -> datetime:
    instant = instant.astimezone(UTC)
    return datetime(instant.year, instant.month, 1, tzinfo=UTC)


def platform_fee_share(start: datetime, end: datetime) -> Fraction:
    """The share of the monthly fee a period owes: each calendar month it touches counts in
    proportion to the seconds of that month inside the period."""
    share = Fraction(0)
    cursor = start
    while cursor < end:
        boundary = min(month_end(cursor), end)
        days = calendar.monthrange(cursor.year, cursor.month)[1]
        month_hours = Fraction(days * 24)
        share += hours_between(cursor, boundary) / month_hours
        cursor = boundary
    return share


@dataclass
class ClusterUsage:
    name: str
    uid: str
    vcpu_hours: Fraction = Fraction(0)
    memory_gib_hours: Fraction = Fraction(0)
    storage_gib_hours: Fraction = Fraction(0)
    ha_hours: Fraction = Fraction(0)

    @property
    def is_empty(self) -> bool:
        return not (self.vcpu_hours or self.memory_gib_hours or self.storage_gib_hours)


def _metered_intervals(
    rows: Sequence[ClusterHistory], start: datetime, end: datetime
) -> Iterable[tuple[ClusterHistory, datetime, datetime]]:
    """(snapshot, from, until) for each metered stretch of one cluster inside [start, end)."""
    for index, row in enumerate(rows):
        until = rows[index + 1].at if index + 1 < len(rows) else end
        begin, finish = max(row.at, start), min(until, end)
        if row.phase in METERED_PHASES and begin < finish:
            yield row, begin, finish


def meter_clusters(
    history: Iterable[ClusterHistory], start: datetime, end: datetime
) -> list[ClusterUsage]:
    """Usage per cluster incarnation over [start, end). ``history`` holds, per cluster, the
    last row before ``start`` (the state at ``start``) and every row up to ``end``."""
    by_uid: dict[str, list[ClusterHistory]] = defaultdict(list)
    for row in history:
        by_uid[row.cluster_uid].append(row)
    usages = []
    for uid, rows in by_uid.items():
        rows.sort(key=lambda row: (row.at, row.id))
        usage = ClusterUsage(name=rows[-1].cluster_name, uid=uid)
        for row, begin, finish in _metered_intervals(rows, start, end):
            hours = hours_between(begin, finish)
            usage.vcpu_hours += hours * Fraction(row.cpu_millicores, 1000)
            usage.memory_gib_hours += hours * Fraction(row.memory_bytes, GIB)
            usage.storage_gib_hours += hours * Fraction(row.storage_bytes, GIB)
            if row.high_availability and row.ha_enabled_at is not None:
                ha_begin = max(begin, row.ha_enabled_at)
                if ha_begin < finish:
                    usage.ha_hours += hours_between(ha_begin, finish)
        if not usage.is_empty:
            usages.append(usage)
    usages.sort(key=lambda usage: (usage.name, usage.uid))
    return usages


@dataclass(frozen=True)
class LineDraft:
    kind: str
    description: str
    quantity: Decimal
    unit: str
    unit_price: Decimal
    amount: Decimal
    cluster: str = ""


@dataclass
class PricedPeriod:
    lines: list[LineDraft] = field(default_factory=list)

    @property
    def subtotal(self) -> Decimal:
        return sum((line.amount for line in self.lines), Decimal("0.00")).quantize(CENT)


def _resource_line(
    kind: str, cluster: str, quantity: Fraction, unit: str, price: Decimal, what: str
) -> LineDraft:
    return LineDraft(
        kind=kind,
        description=f"{what}, cluster {cluster}",
        cluster=cluster,
        quantity=round_quantity(quantity),
        unit=unit,
        unit_price=price,
        amount=round_money(quantity * Fraction(price)),
    )


def price_period(
    prices: PlanPrices,
    start: datetime,
    end: datetime,
    usages: Sequence[ClusterUsage],
    observability: dict[str, Decimal],
) -> PricedPeriod:
    priced = PricedPeriod()
    share = platform_fee_share(start, end)
    priced.lines.append(
        LineDraft(
            kind="platform",
            description=f"Platform fee, {prices.plan} plan",
            quantity=round_quantity(share),
            unit="month",
            unit_price=prices.platform_fee,
            amount=round_money(share * Fraction(prices.platform_fee)),
        )
    )
    for usage in usages:
        priced.lines.append(
            _resource_line(
                "cpu", usage.name, usage.vcpu_hours, "vCPU-hour", prices.vcpu_hour, "CPU"
            )
        )
        priced.lines.append(
            _resource_line(
                "memory",
                usage.name,
                usage.memory_gib_hours,
                "GiB-hour",
                prices.memory_gib_hour,
                "Memory",
            )
        )
        priced.lines.append(
            _resource_line(
                "storage",
                usage.name,
                usage.storage_gib_hours,
                "GiB-hour",
                prices.storage_gib_hour,
                "Storage",
            )
        )
        if usage.ha_hours:
            priced.lines.append(
                _resource_line(
                    "ha",
                    usage.name,
                    usage.ha_hours,
                    "hour",
                    prices.ha_control_plane_hour,
                    "HA control plane",
                )
            )
    for meter in prices.meters:
        used = observability.get(meter.name, Decimal(0))
        billable = max(used - meter.included, Decimal(0))
        priced.lines.append(
            LineDraft(
                kind=f"observability.{meter.name}",
                description=f"Observability {meter.name} ({meter.included} {meter.unit} included)",
                quantity=used,
                unit=meter.unit,
                unit_price=meter.price,
                amount=round_money(billable * meter.price),
            )
        )
    return priced
