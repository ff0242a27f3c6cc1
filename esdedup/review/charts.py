"""Charts as plain shapes (rectangles, polylines, labels) that the templates draw as inline SVG: nothing
to fetch, nothing to ship but these numbers. Every label is text the template escapes."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["Bar", "BarChart", "LineChart", "bar_chart", "line_chart"]

WIDTH, HEIGHT = 560, 220
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 12, 44


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    w: float
    h: float
    label: str
    count: int


@dataclass
class BarChart:
    title: str
    bars: list[Bar]
    ticks: list[tuple[float, str]]  # (x, label) under the axis
    y_max: int
    marker: tuple[float, str] | None = None  # (x, label): a threshold
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    bottom: int = HEIGHT - BOTTOM
    horizontal: bool = False


def bar_chart(title: str, labels: Sequence[str], counts: Sequence[int], *, marker_at: float | None = None,
              marker_label: str = "", tick_every: int = 1) -> BarChart:
    """Vertical bars, one per label; ``marker_at`` draws a threshold line at that bar position (0 = the left
    edge of the first bar, 1 = its right edge)."""
    n = max(1, len(counts))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / n
    top = max([1, *counts])
    # A bar is at most a tenth of the plot wide: one lone bar is not a wall.
    width = min(max(1.0, step - 2), plot_w / 10)
    bars = [Bar(LEFT + (i + 0.5) * step - width / 2, TOP + plot_h - c / top * plot_h, width, c / top * plot_h, lab, c)
            for i, (lab, c) in enumerate(zip(labels, counts, strict=True))]
    ticks = [(LEFT + (i + 0.5) * step, lab) for i, lab in enumerate(labels) if i % max(1, tick_every) == 0]
    marker = None if marker_at is None else (LEFT + marker_at * step, marker_label)
    return BarChart(title, bars, ticks, top, marker)


@dataclass
class LineChart:
    title: str
    series: list[tuple[str, str, list[tuple[float, float]]]]  # (name, css class, points)
    ticks: list[tuple[float, str]]
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    bottom: int = HEIGHT - BOTTOM
    top: int = TOP
    marker: tuple[float, str] | None = None
    points_text: list[str] = field(default_factory=list)


def line_chart(title: str, xs: Sequence[float], series: dict[str, Sequence[float]], *,
               x_labels: Sequence[str], marker_at: float | None = None, marker_label: str = "") -> LineChart:
    """Lines of values in [0, 1] over the positions ``xs`` (drawn evenly spaced, in order)."""
    n = max(1, len(xs) - 1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(i: float) -> float:
        return LEFT + i / n * plot_w

    out = []
    for name, values in series.items():
        pts = [(round(px(i), 1), round(TOP + plot_h - max(0.0, min(1.0, v)) * plot_h, 1))
               for i, v in enumerate(values)]
        out.append((name, name.lower(), pts))
    chart = LineChart(title, out, [(px(i), lab) for i, lab in enumerate(x_labels)])
    if marker_at is not None:
        chart.marker = (px(marker_at), marker_label)
    chart.points_text = [" ".join(f"{x},{y}" for x, y in pts) for _, _, pts in out]
    return chart
