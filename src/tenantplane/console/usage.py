"""Cluster-hours of the current billing period, per UTC day and cluster: the usage chart's data.

What the chart measures: for each cluster (by name), the hours of each UTC calendar day it
spent in a metered phase, Running or Upgrading: the phases billing charges for
(docs/billing.md, "Metering"; Pending, Provisioning, Failed and Terminating are free). It is
an estimate of what the next invoice's resource lines are made of, not the invoice: billing
meters its own history table, which the API does not serve.

It is derived from what the public API tells any member of the tenant:
- the platform events ``cluster.phase_changed`` (``{from, to}`` at ``time``) since the period
  started: creation (Pending → Provisioning → Running), upgrades, failures and deletion
  (→ Terminating, Terminating → Deleted) are all phase changes;
- the cluster list (``name``, ``status.phase``, ``createdAt``), for clusters whose phase did
  not change in the period: their current phase held since the period (or they) started.
A cluster's phase before its first event of the period is that event's ``from``. A name
deleted and created again is one series (the chart names clusters, not incarnations).
Events older than the plan's retention are gone: a period longer than the retention (a
starter tenant keeps 30 days) may lose its first day's changes.

Pure: no I/O, times are aware datetimes in UTC.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

METERED_PHASES = frozenset({"Running", "Upgrading"})
PHASE_CHANGED = "cluster.phase_changed"


@dataclass(frozen=True)
class Period:
    """A billing period, [start, end)."""

    start: datetime
    end: datetime

    @property
    def days(self) -> tuple[date, ...]:
        first, last = self.start.date(), (self.end - timedelta(microseconds=1)).date()
        return tuple(first + timedelta(days=n) for n in range((last - first).days + 1))


@dataclass(frozen=True)
class PhaseChange:
    time: datetime
    cluster: str
    before: str
    after: str


@dataclass(frozen=True)
class ListedCluster:
    name: str
    phase: str
    created_at: datetime


@dataclass(frozen=True)
class DailyUsage:
    """Metered hours per cluster and day of ``period``, counted up to ``until``."""

    period: Period
    until: datetime
    # Ordered by hours in the period, most first, then by name.
    clusters: tuple[str, ...]
    hours: Mapping[str, tuple[float, ...]]

    @property
    def days(self) -> tuple[date, ...]:
        return self.period.days

    @property
    def days_so_far(self) -> tuple[date, ...]:
        """The days that have begun (the data table's rows)."""
        return tuple(day for day in self.days if day <= self.until.date())

    def total(self, cluster: str) -> float:
        return sum(self.hours[cluster])

    def day_total(self, index: int) -> float:
        return sum(self.hours[cluster][index] for cluster in self.clusters)

    @property
    def grand_total(self) -> float:
        return sum(self.total(cluster) for cluster in self.clusters)


def instant(value: str) -> datetime:
    """An RFC 3339 timestamp of the API (``…Z``) as an aware datetime in UTC."""
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError(f"{value!r} has no offset")
    return parsed.astimezone(UTC)


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _month_start(moment: datetime) -> datetime:
    return datetime(moment.year, moment.month, 1, tzinfo=UTC)


def _next_month(moment: datetime) -> datetime:
    return (_month_start(moment) + timedelta(days=32)).replace(day=1)


def current_period(now: datetime, invoiced_until: Iterable[datetime]) -> Period:
    """The period ``now`` is in: periods are calendar months in UTC, and one starts where the
    last invoice ended when that is later in the month (an invoice issued mid-month, e.g. the
    tenant's first). An invoice ending after ``now`` (a period closed ahead of time) does not
    move the period: the chart shows the month being lived."""
    start = _month_start(now)
    ends = [end for end in invoiced_until if start < end <= now]
    return Period(max(ends, default=start), _next_month(now))


def phase_changes(events: Iterable[Mapping[str, Any]]) -> list[PhaseChange]:
    """The ``cluster.phase_changed`` events among ``events`` (API documents), oldest first.
    The API answers newest first; events of one instant keep their stream order."""
    found = [
        PhaseChange(
            time=instant(event["time"]),
            cluster=str(event["resource"]["name"]),
            before=str(event["data"].get("from", "")),
            after=str(event["data"].get("to", "")),
        )
        for event in events
        if event.get("action") == PHASE_CHANGED
        and event.get("resource", {}).get("kind") == "cluster"
    ]
    found.reverse()
    return sorted(found, key=lambda change: change.time)


def listed_clusters(items: Iterable[Mapping[str, Any]]) -> list[ListedCluster]:
    """The cluster list's items (API documents) as the computation needs them."""
    return [
        ListedCluster(
            name=str(item["name"]),
            phase=str(item["status"]["phase"]),
            created_at=instant(item["createdAt"]),
        )
        for item in items
    ]


def metered_intervals(
    period: Period,
    until: datetime,
    clusters: Sequence[ListedCluster],
    changes: Sequence[PhaseChange],
) -> dict[str, list[tuple[datetime, datetime]]]:
    """Per cluster name, the spans of [period.start, min(until, period.end)) it was metered."""
    stop = min(until, period.end)
    by_cluster: dict[str, list[PhaseChange]] = {}
    for change in changes:
        if period.start <= change.time <= stop:
            by_cluster.setdefault(change.cluster, []).append(change)
    spans: dict[str, list[tuple[datetime, datetime]]] = {}

    def add(name: str, begin: datetime, end: datetime) -> None:
        begin, end = max(begin, period.start), min(end, stop)
        if begin < end:
            spans.setdefault(name, []).append((begin, end))

    for name, history in by_cluster.items():
        phase, since = history[0].before, period.start
        for change in history:
            if phase in METERED_PHASES:
                add(name, since, change.time)
            phase, since = change.after, change.time
        if phase in METERED_PHASES:
            add(name, since, stop)
    for cluster in clusters:
        # Unchanged through the period: as it is now, since the period or its creation.
        if cluster.name not in by_cluster and cluster.phase in METERED_PHASES:
            add(cluster.name, max(period.start, cluster.created_at), stop)
    return spans


def _hours_by_day(
    days: Sequence[date], spans: Iterable[tuple[datetime, datetime]]
) -> tuple[float, ...]:
    index = {day: n for n, day in enumerate(days)}
    seconds = [0.0] * len(days)
    for begin, end in spans:
        cursor = begin
        while cursor < end:
            midnight = datetime.combine(cursor.date() + timedelta(days=1), datetime.min.time(), UTC)
            piece_end = min(end, midnight)
            if cursor.date() in index:
                seconds[index[cursor.date()]] += (piece_end - cursor).total_seconds()
            cursor = piece_end
    return tuple(value / 3600 for value in seconds)


def daily_usage(
    period: Period,
    until: datetime,
    clusters: Sequence[ListedCluster],
    changes: Sequence[PhaseChange],
) -> DailyUsage:
    """Metered hours per cluster and UTC day of ``period``, up to ``until`` (now)."""
    spans = metered_intervals(period, until, clusters, changes)
    hours = {name: _hours_by_day(period.days, found) for name, found in spans.items()}
    ordered = sorted(hours, key=lambda name: (-sum(hours[name]), name))
    return DailyUsage(period=period, until=until, clusters=tuple(ordered), hours=hours)
