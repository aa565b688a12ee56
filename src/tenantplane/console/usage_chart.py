"""The usage chart's geometry: stacked bars of metered cluster-hours per day, one colour per
cluster, drawn by the template as server-side SVG (no script, no inline style: the CSP
forbids both, and SVG presentation attributes are allowed).

Pure: it turns a ``DailyUsage`` (console/usage.py) into coordinates, labels and colours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tenantplane.console.usage import DailyUsage

# Mid-tone colours (Tableau 10) that keep their contrast on the light and the dark theme.
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
)
OTHERS_COLOUR = "#bab0ac"

# The SVG scales to its container (console.css) with its text: a small coordinate space
# keeps the 11px labels readable on a 390px-wide phone (about 8px there).
WIDTH, HEIGHT = 480.0, 260.0
LEFT, RIGHT, TOP, BOTTOM = 40.0, 8.0, 10.0, 40.0


@dataclass(frozen=True)
class Series:
    label: str
    colour: str
    clusters: tuple[str, ...]
    hours: tuple[float, ...]

    @property
    def total(self) -> float:
        return sum(self.hours)


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    colour: str
    # The bar's tooltip (its SVG <title>).
    title: str


@dataclass(frozen=True)
class Tick:
    position: float
    label: str


@dataclass(frozen=True)
class Chart:
    width: float
    height: float
    left: float
    right: float
    top: float
    bottom: float
    series: tuple[Series, ...]
    bars: tuple[Bar, ...]
    y_ticks: tuple[Tick, ...]
    x_ticks: tuple[Tick, ...]
    x_label: str
    y_label: str
    description: str


def hours_text(hours: float) -> str:
    if hours == 0:
        return "0"
    if hours < 0.01:
        return "<0.01"
    return f"{hours:,.2f}"


def series_of(usage: DailyUsage) -> tuple[Series, ...]:
    """One series per cluster, most hours first; past the palette's colours, the remaining
    clusters share one series ("N other clusters") so that every colour names one thing."""
    own = (
        usage.clusters
        if len(usage.clusters) <= len(PALETTE)
        else usage.clusters[: len(PALETTE) - 1]
    )
    found = [Series(name, PALETTE[n], (name,), usage.hours[name]) for n, name in enumerate(own)]
    rest = usage.clusters[len(own) :]
    if rest:
        summed = tuple(
            sum(usage.hours[name][day] for name in rest) for day in range(len(usage.days))
        )
        found.append(Series(f"{len(rest)} other clusters", OTHERS_COLOUR, rest, summed))
    return tuple(found)


def nice_step(top: float, ticks: int = 5) -> float:
    """A round step (1, 2 or 5 times a power of ten): at most ``ticks`` steps to ``top``."""
    if top <= 0:
        return 1.0
    rough = top / ticks
    magnitude = 10.0 ** math.floor(math.log10(rough))
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= rough)


def _tick_label(value: float, step: float) -> str:
    decimals = max(0, -math.floor(math.log10(step))) if step < 1 else 0
    return f"{value:.{decimals}f}"


def layout(usage: DailyUsage) -> Chart:
    series = series_of(usage)
    days = usage.days
    peak = max((usage.day_total(n) for n in range(len(days))), default=0.0)
    step = nice_step(peak)
    scale_top = step * max(1, math.ceil(peak / step - 1e-9))
    plot_width, plot_height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_width / max(1, len(days))
    bar_width = slot * 0.72

    def y_of(value: float) -> float:
        return TOP + plot_height - value / scale_top * plot_height

    bars: list[Bar] = []
    for n, day in enumerate(days):
        stacked = 0.0
        for item in series:
            value = item.hours[n]
            if value <= 0:
                continue
            low, high = y_of(stacked), y_of(stacked + value)
            stacked += value
            bars.append(
                Bar(
                    x=round(LEFT + n * slot + (slot - bar_width) / 2, 2),
                    y=round(high, 2),
                    width=round(bar_width, 2),
                    height=round(max(low - high, 0.5), 2),
                    colour=item.colour,
                    title=f"{item.label}, {day.isoformat()}: {hours_text(value)} h",
                )
            )
    steps = round(scale_top / step)
    y_ticks = tuple(
        Tick(round(y_of(k * step), 2), _tick_label(k * step, step)) for k in range(steps + 1)
    )
    # Every day would crowd a narrow screen: the first day and every fifth.
    x_ticks = tuple(
        Tick(round(LEFT + n * slot + slot / 2, 2), str(day.day))
        for n, day in enumerate(days)
        if day.day == 1 or day.day % 5 == 0
    )
    month = usage.period.start.strftime("%B %Y")
    return Chart(
        width=WIDTH,
        height=HEIGHT,
        left=LEFT,
        right=WIDTH - RIGHT,
        top=TOP,
        bottom=TOP + plot_height,
        series=series,
        bars=tuple(bars),
        y_ticks=y_ticks,
        x_ticks=x_ticks,
        x_label=f"Day of {month} (UTC)",
        y_label="Cluster-hours",
        description=_description(usage, series),
    )


def _description(usage: DailyUsage, series: tuple[Series, ...]) -> str:
    first, last = usage.days[0], usage.days[-1]
    span = f"{first.day} {first:%B} to {last.day} {last:%B %Y}"
    if not series:
        return f"Stacked bars of metered cluster-hours per day, {span}: none so far."
    parts = ", ".join(f"{item.label} {hours_text(item.total)} h" for item in series)
    return (
        f"Stacked bars of metered cluster-hours per day, {span}, one colour per cluster. "
        f"In all {hours_text(usage.grand_total)} h: {parts}."
    )
