"""The usage chart's computation (console/usage.py) and geometry (console/usage_chart.py):
metered cluster-hours per UTC day of the current billing period, from the clusters' phase
changes and the cluster list, as the API serves them."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from tenantplane.console.usage import (
    DailyUsage,
    ListedCluster,
    Period,
    PhaseChange,
    current_period,
    daily_usage,
    listed_clusters,
    phase_changes,
)
from tenantplane.console.usage_chart import OTHERS_COLOUR, PALETTE, layout, nice_step, series_of

DECEMBER = Period(datetime(2026, 12, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC))


def at(day: int, hour: float = 0) -> datetime:
    return datetime(2026, 12, day, tzinfo=UTC) + timedelta(hours=hour)


def change(day: int, hour: float, cluster: str, before: str, after: str) -> PhaseChange:
    return PhaseChange(at(day, hour), cluster, before, after)


def hours_of(usage: DailyUsage, cluster: str) -> dict[int, float]:
    """The cluster's non-zero days, by day of the month (rounded: floats of whole seconds)."""
    return {
        day.day: round(value, 9)
        for day, value in zip(usage.days, usage.hours[cluster], strict=True)
        if value
    }


# The period ------------------------------------------------------------------------------


def test_the_period_is_the_calendar_month_of_now() -> None:
    period = current_period(at(15, 10), [datetime(2026, 12, 1, tzinfo=UTC)])
    assert period == DECEMBER
    assert len(period.days) == 31
    assert period.days[0] == date(2026, 12, 1)
    assert period.days[-1] == date(2026, 12, 31)
    assert current_period(datetime(2027, 2, 10, tzinfo=UTC), []).end == datetime(
        2027, 3, 1, tzinfo=UTC
    )


def test_a_period_starts_where_the_last_invoice_ended_within_the_month() -> None:
    # A final invoice (or a first one) that ended mid-month: the period starts there.
    period = current_period(at(20), [at(1), at(10, 6)])
    assert period.start == at(10, 6)
    assert period.days[0] == date(2026, 12, 10)
    # An invoice closed ahead of time (its period ends after now) does not move it.
    assert current_period(at(20), [datetime(2027, 1, 1, tzinfo=UTC)]) == DECEMBER


# The hours --------------------------------------------------------------------------------


def test_a_cluster_created_and_deleted_in_the_period_counts_its_running_hours_per_day() -> None:
    changes = [
        change(3, 22, "web", "Pending", "Provisioning"),
        # Running from 23:00 on the 3rd: one hour that day, then a whole day, then 5 hours.
        change(3, 23, "web", "Provisioning", "Running"),
        change(5, 5, "web", "Running", "Terminating"),
        change(5, 5.5, "web", "Terminating", "Deleted"),
    ]
    usage = daily_usage(DECEMBER, at(20), [], changes)
    assert usage.clusters == ("web",)
    assert hours_of(usage, "web") == {3: 1, 4: 24, 5: 5}
    assert usage.total("web") == pytest.approx(30)


def test_a_cluster_unchanged_since_before_the_period_counts_from_its_start_until_now() -> None:
    listed = [ListedCluster("db", "Running", datetime(2026, 10, 3, tzinfo=UTC))]
    usage = daily_usage(DECEMBER, at(3, 12), listed, [])
    assert hours_of(usage, "db") == {1: 24, 2: 24, 3: 12}
    # Days after now are in the chart (the month's shape) but not in the data table.
    assert len(usage.days) == 31
    assert usage.days_so_far[-1] == date(2026, 12, 3)


def test_a_listed_cluster_without_changes_counts_from_its_creation() -> None:
    listed = [
        ListedCluster("new", "Running", at(2, 18)),
        ListedCluster("waiting", "Provisioning", at(2, 18)),
    ]
    usage = daily_usage(DECEMBER, at(3, 6), listed, [])
    assert usage.clusters == ("new",)
    assert hours_of(usage, "new") == {2: 6, 3: 6}


def test_only_running_and_upgrading_are_metered() -> None:
    changes = [
        change(2, 0, "api", "Running", "Upgrading"),
        change(2, 2, "api", "Upgrading", "Running"),
        change(2, 10, "api", "Running", "Failed"),
        change(2, 14, "api", "Failed", "Running"),
    ]
    listed = [ListedCluster("api", "Running", datetime(2026, 11, 1, tzinfo=UTC))]
    usage = daily_usage(DECEMBER, at(3), listed, changes)
    # The 1st whole, the 2nd less the four Failed hours; the current phase is not used when
    # the changes tell the story.
    assert hours_of(usage, "api") == {1: 24, 2: 20}


def test_the_phase_before_the_first_change_is_its_from() -> None:
    # Running since before the period (its creation is older than the events read).
    usage = daily_usage(DECEMBER, at(10), [], [change(2, 6, "old", "Running", "Terminating")])
    assert hours_of(usage, "old") == {1: 24, 2: 6}


def test_a_name_deleted_and_created_again_is_one_series() -> None:
    changes = [
        change(1, 0, "web", "Running", "Terminating"),
        change(1, 1, "web", "Terminating", "Deleted"),
        change(1, 2, "web", "Pending", "Provisioning"),
        change(1, 3, "web", "Provisioning", "Running"),
    ]
    listed = [ListedCluster("web", "Running", at(1, 2))]
    usage = daily_usage(DECEMBER, at(1, 10), listed, changes)
    assert hours_of(usage, "web") == {1: 7}


def test_clusters_are_ordered_by_hours_then_name() -> None:
    listed = [
        ListedCluster("b", "Running", at(1, 12)),
        ListedCluster("a", "Running", at(1, 12)),
        ListedCluster("big", "Running", at(1)),
    ]
    usage = daily_usage(DECEMBER, at(2), listed, [])
    assert usage.clusters == ("big", "a", "b")
    assert usage.day_total(0) == pytest.approx(48)
    assert usage.grand_total == pytest.approx(48)


def event(seconds: int, name: str, before: str, after: str, **extra: Any) -> dict[str, Any]:
    time = at(1) + timedelta(seconds=seconds)
    return {
        "time": time.isoformat().replace("+00:00", "Z"),
        "type": "platform",
        "action": "cluster.phase_changed",
        "resource": {"kind": "cluster", "name": name},
        "data": {"from": before, "to": after},
        **extra,
    }


def test_api_documents_become_changes_oldest_first() -> None:
    newest_first = [
        event(5, "web", "Provisioning", "Running"),
        # Two changes in one instant: the stream's order (older one listed later) is kept.
        event(1, "web", "Pending", "Provisioning"),
        event(1, "web", "Deleted", "Pending"),
        {**event(0, "web", "", ""), "action": "cluster.create", "type": "audit"},
    ]
    found = phase_changes(newest_first)
    assert [(c.before, c.after) for c in found] == [
        ("Deleted", "Pending"),
        ("Pending", "Provisioning"),
        ("Provisioning", "Running"),
    ]
    assert found[0].time == at(1) + timedelta(seconds=1)
    [cluster] = listed_clusters(
        [{"name": "web", "status": {"phase": "Running"}, "createdAt": "2026-12-01T00:00:00Z"}]
    )
    assert cluster == ListedCluster("web", "Running", at(1))


# The chart --------------------------------------------------------------------------------


def test_each_cluster_has_its_colour_and_the_rest_share_one() -> None:
    few = daily_usage(DECEMBER, at(2), [ListedCluster("a", "Running", at(1))], [])
    assert [(s.label, s.colour) for s in series_of(few)] == [("a", PALETTE[0])]
    many = [ListedCluster(f"c{n:02d}", "Running", at(1, n)) for n in range(12)]
    usage = daily_usage(DECEMBER, at(2), many, [])
    series = series_of(usage)
    assert [s.label for s in series[:-1]] == [f"c{n:02d}" for n in range(8)]
    assert len({s.colour for s in series}) == len(series)
    others = series[-1]
    assert (others.label, others.colour) == ("4 other clusters", OTHERS_COLOUR)
    assert others.clusters == ("c08", "c09", "c10", "c11")
    assert others.hours[0] == pytest.approx(sum(24 - n for n in range(8, 12)))


@pytest.mark.parametrize(
    ("top", "step"), [(0, 1), (48, 10), (24, 5), (7, 2), (100, 20), (0.004, 0.001)]
)
def test_axis_steps_are_round(top: float, step: float) -> None:
    assert nice_step(top) == pytest.approx(step)


def test_bars_stack_per_day_within_the_plot() -> None:
    listed = [ListedCluster("big", "Running", at(1)), ListedCluster("small", "Running", at(1, 18))]
    usage = daily_usage(DECEMBER, at(2), listed, [])
    chart = layout(usage)
    big, small = chart.bars
    assert big.colour == PALETTE[0]
    assert small.colour == PALETTE[1]
    # The second cluster sits on the first, in the same column.
    assert small.x == big.x
    assert small.y + small.height == pytest.approx(big.y, abs=0.01)
    assert big.y + big.height == pytest.approx(chart.bottom, abs=0.01)
    assert small.y >= chart.top
    # 30 hours on the 1st: the axis goes to 30 in steps of 10.
    assert [tick.label for tick in chart.y_ticks] == ["0", "10", "20", "30"]
    assert small.y == pytest.approx(chart.top, abs=0.01)
    assert big.title == "big, 2026-12-01: 24.00 h"
    assert [tick.label for tick in chart.x_ticks] == ["1", "5", "10", "15", "20", "25", "30"]
    assert chart.x_label == "Day of December 2026 (UTC)"
    assert "big 24.00 h" in chart.description
    assert "small 6.00 h" in chart.description


def test_a_period_without_usage_draws_no_bars() -> None:
    chart = layout(daily_usage(DECEMBER, at(2), [], []))
    assert chart.bars == ()
    assert chart.series == ()
    assert "none so far" in chart.description
