"""Metric charts as SVG: one line chart per metric key, drawn on the server from `metrics.series_of` points, with
a labelled vertical mark at each step where a later attempt of the job resumed; and a bar chart of one value per run
(a benchmark suite's metric), each bar with its spread as a whisker.

Tier: shared (pure). The SVG is plain markup with no script and no external reference; its colours come from the
page's stylesheet (`currentColor` and CSS classes), so the chart follows the light or dark theme. Long series are
thinned to at most `MAX_POINTS` points by the charts' one decimation rule (first, last, each bucket's min and max).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from ..services.jobs.decimate import kept_indexes

__all__ = ["MAX_POINTS", "Bar", "Chart", "Curve", "Mark", "Plot", "attempt_marks", "bar_chart", "charts_of",
           "line_chart", "line_plot", "runs_chart", "scatter_plot"]

MAX_POINTS = 400
_W, _H = 480, 200
_LEFT, _RIGHT, _TOP, _BOTTOM = 52, 12, 12, 28


@dataclass(frozen=True)
class Chart:
    """One metric's chart: its key, its latest value and the SVG markup."""

    key: str
    latest: float
    points: int
    svg: Markup


@dataclass(frozen=True)
class Mark:
    """A step to mark on every chart (where an attempt of the job resumed), with its label."""

    step: float
    label: str


def attempt_marks(history: Sequence[Mapping[str, Any]]) -> list[Mark]:
    """Return a mark at the resume step of each attempt after the first that resumed from a checkpoint (an attempt
    that started over has its earlier points dropped, so there is nothing to mark)."""
    marks = []
    for attempt in history:
        number, step = attempt.get("number"), attempt.get("resume_step")
        if isinstance(number, int) and number > 1 and isinstance(step, int | float) and not isinstance(step, bool):
            marks.append(Mark(float(step), f"attempt {number}"))
    return marks


def _label(value: float) -> str:
    if value == 0 or 1e-3 <= abs(value) < 1e5:
        return f"{value:.4g}"
    return f"{value:.2e}"


def _thin(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points an SVG draws: min/max decimation (`decimate.kept_indexes`, the rule the charts' data follows), so
    the fallback keeps every spike the script's chart shows."""
    return [points[i] for i in kept_indexes([y for _x, y in points], MAX_POINTS)]


def line_chart(key: str, points: Sequence[tuple[float, float]], marks: Sequence[Mark] = ()) -> Markup:
    """Return an SVG line chart of `(step, value)` points (in step order), with its axes' ranges labelled and a
    dashed vertical line, labelled, at each mark inside the steps drawn."""
    pts = _thin(points)
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    y0, y1 = (min(ys), max(ys)) if ys else (0.0, 1.0)
    if x1 == x0:
        x1 = x0 + 1
    if y1 == y0:
        y0, y1 = y0 - 0.5, y1 + 0.5
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

    def at(x: float, y: float) -> tuple[str, str]:
        return f"{_LEFT + (x - x0) / (x1 - x0) * plot_w:.1f}", f"{_TOP + (y1 - y) / (y1 - y0) * plot_h:.1f}"

    line = " ".join(",".join(at(x, y)) for x, y in pts)
    last = ""
    if pts:
        cx, cy = at(*pts[-1])
        last = f'<circle class="chart-last" r="3" cx="{cx}" cy="{cy}"/>'
    bottom = _H - _BOTTOM
    shown = [m for m in marks if x0 <= m.step <= x1]
    drawn = ""
    for mark in shown:
        x = at(mark.step, y1)[0]
        right = float(x) > _W - _RIGHT - 60  # near the right edge: the label goes to the line's left
        label_at = f'x="{float(x) + (-3 if right else 3):.1f}" y="{_TOP + 10}"' + (' text-anchor="end"' if right else "")
        drawn += (f'<line class="chart-mark" x1="{x}" y1="{_TOP}" x2="{x}" y2="{bottom}"/>'
                  f'<text class="chart-mark-label" {label_at}>{escape(mark.label)}</text>')
    title = escape(key)
    where = "; " + ", ".join(f"{m.label} from step {_label(m.step)}" for m in shown) if shown else ""
    summary = escape(f"{key}: {len(points)} points, steps {_label(x0)} to {_label(x1)}, "
                     f"values {_label(y0)} to {_label(y1)}{where}")
    return Markup(
        f'<svg class="chart" viewBox="0 0 {_W} {_H}" role="img" aria-label="{summary}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{title}</title>'
        f'<rect class="chart-frame" x="{_LEFT}" y="{_TOP}" width="{plot_w}" height="{plot_h}"/>'
        f'<text class="chart-tick" x="{_LEFT - 4}" y="{_TOP + 10}" text-anchor="end">{_label(y1)}</text>'
        f'<text class="chart-tick" x="{_LEFT - 4}" y="{bottom}" text-anchor="end">{_label(y0)}</text>'
        f'<text class="chart-tick" x="{_LEFT}" y="{_H - 8}">{_label(x0)}</text>'
        f'<text class="chart-tick" x="{_W - _RIGHT}" y="{_H - 8}" text-anchor="end">step {_label(x1)}</text>'
        f'{drawn}<polyline class="chart-line" points="{line}"/>{last}</svg>'
    )


@dataclass(frozen=True)
class Curve:
    """One run's curve on a chart: the name the legend shows, its job, and its (decimated) series."""

    name: str
    job: str
    series: Mapping[str, Any]  # run_series.Series: x, y, t, points


@dataclass(frozen=True)
class Plot:
    """A chart for `static/charts.js` (uPlot): its key, the data it draws (`payload`, sent as a JSON block), and the
    SVG drawn without JavaScript (`svg`, empty where a table beside it is the fallback)."""

    key: str
    latest: float
    points: int
    payload: dict[str, Any]
    svg: Markup


def runs_chart(key: str, curves: Sequence[Curve]) -> Markup:
    """Return an SVG of several runs' curves on shared axes, one colour class per run (`chart-run-<i>`), each run
    named in a `<title>`."""
    drawn = [(c, list(zip(c.series["x"], c.series["y"], strict=True))) for c in curves]
    xs = [x for _c, pts in drawn for x, _y in pts] or [0.0, 1.0]
    ys = [y for _c, pts in drawn for _x, y in pts] or [0.0, 1.0]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    x1, (y0, y1) = (x1 if x1 > x0 else x0 + 1), ((y0, y1) if y1 > y0 else (y0 - 0.5, y1 + 0.5))
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    lines = ""
    for i, (curve, pts) in enumerate(drawn):
        line = " ".join(f"{_LEFT + (x - x0) / (x1 - x0) * plot_w:.1f},{_TOP + (y1 - y) / (y1 - y0) * plot_h:.1f}"
                        for x, y in _thin(pts))
        lines += (f'<polyline class="chart-line chart-run-{i % 10}" points="{line}">'
                  f'<title>{escape(curve.name)}</title></polyline>')
    summary = escape(f"{key}: {len(curves)} runs, steps {_label(x0)} to {_label(x1)}, values {_label(y0)} to "
                     f"{_label(y1)}")
    return Markup(
        f'<svg class="chart" viewBox="0 0 {_W} {_H}" role="img" aria-label="{summary}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(key)}</title>'
        f'<rect class="chart-frame" x="{_LEFT}" y="{_TOP}" width="{plot_w}" height="{plot_h}"/>'
        f'<text class="chart-tick" x="{_LEFT - 4}" y="{_TOP + 10}" text-anchor="end">{_label(y1)}</text>'
        f'<text class="chart-tick" x="{_LEFT - 4}" y="{_H - _BOTTOM}" text-anchor="end">{_label(y0)}</text>'
        f'<text class="chart-tick" x="{_LEFT}" y="{_H - 8}">{_label(x0)}</text>'
        f'<text class="chart-tick" x="{_W - _RIGHT}" y="{_H - 8}" text-anchor="end">step {_label(x1)}</text>'
        f'{lines}</svg>'
    )


def line_plot(key: str, curves: Sequence[Curve], marks: Sequence[Mark] = (), *, svg: bool = True) -> Plot:
    """Return the chart of metric `key` over steps for `curves` (one per run), with `marks` (resumed attempts) drawn
    at their steps; its fallback is `line_chart` for one run and `runs_chart` for several."""
    runs = [{"name": c.name, "job": c.job, "x": c.series["x"], "y": c.series["y"], "t": c.series["t"]}
            for c in curves]
    payload = {"kind": "line", "key": key, "runs": runs, "marks": [{"step": m.step, "label": m.label} for m in marks]}
    points = sum(int(c.series["points"]) for c in curves)
    last = curves[-1].series["y"] if curves else []
    fallback = Markup("")
    if svg and len(curves) == 1:
        fallback = line_chart(key, list(zip(curves[0].series["x"], last, strict=True)), marks)
    elif svg:
        fallback = runs_chart(key, curves)
    latest = float(last[-1]) if last and len(curves) == 1 else math.nan  # of several runs: the table says
    return Plot(key, latest, points, payload, fallback)


def scatter_plot(param: str, metric: str, points: Sequence[tuple[str, str, Any, float]]) -> Plot:
    """Return a scatter of `param`'s value (x) against `metric`'s final value (y), one point per run
    (`(name, job, x, y)`); numbers are placed by value (on a log axis when they span two decades or more, all
    above zero), anything else by category; the sweep's table is its fallback (no SVG)."""
    numeric = all(isinstance(x, int | float) and not isinstance(x, bool) for _n, _j, x, _y in points)
    categories: list[str] = [] if numeric else sorted({str(x) for _n, _j, x, _y in points})
    placed = sorted(((float(x) if numeric else float(categories.index(str(x))), y, name, job)
                     for name, job, x, y in points), key=lambda p: p[0])
    values = [p[0] for p in placed]
    xlog = numeric and bool(values) and min(values) > 0 and max(values) / min(values) >= 100
    payload = {"kind": "scatter", "key": f"{metric} by {param}", "param": param, "metric": metric, "xlog": xlog,
               "categories": categories, "x": values, "y": [p[1] for p in placed],
               "names": [p[2] for p in placed], "jobs": [p[3] for p in placed]}
    return Plot(param, math.nan, len(placed), payload, Markup(""))


def charts_of(series: dict[str, list[list[Any]]], marks: Sequence[Mark] = ()) -> list[Chart]:
    """Return one chart per metric key (sorted by key) from `{key: [[step, value, ts], ...]}`, each with `marks`;
    points without a step are placed by their order."""
    charts = []
    for key in sorted(series):
        raw = series[key]
        points = [(float(step) if step is not None else float(i), float(value))
                  for i, (step, value, _ts) in enumerate(raw)]
        charts.append(Chart(key, points[-1][1] if points else math.nan, len(points), line_chart(key, points, marks)))
    return charts


@dataclass(frozen=True)
class Bar:
    """One bar of a bar chart: its label (a run), its value, and the spread drawn around it (None: not measured)."""

    label: str
    value: float
    spread: float | None = None


def bar_chart(title: str, bars: Sequence[Bar]) -> Markup:
    """Return an SVG bar chart of one value per label, from zero (or the lowest value, when below zero) to the
    highest value plus its spread, each bar with a whisker of ± its spread and its label under it."""
    tops = [b.value + (b.spread or 0.0) for b in bars] or [1.0]
    lows = [min(0.0, b.value - (b.spread or 0.0)) for b in bars] or [0.0]
    y0, y1 = min(lows), max(max(tops), 0.0)
    if y1 == y0:
        y1 = y0 + 1
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    bottom = _H - _BOTTOM

    def y_at(value: float) -> float:
        return _TOP + (y1 - value) / (y1 - y0) * plot_h

    slot = plot_w / max(1, len(bars))
    width = min(60.0, slot * 0.6)
    drawn = ""
    for i, bar in enumerate(bars):
        x = _LEFT + slot * i + (slot - width) / 2
        top, base = y_at(max(bar.value, 0.0)), y_at(min(bar.value, 0.0))
        drawn += (f'<rect class="chart-bar chart-bar-{i % 6}" x="{x:.1f}" y="{top:.1f}" width="{width:.1f}" '
                  f'height="{max(base - top, 0.5):.1f}"><title>{escape(bar.label)}: {_label(bar.value)}</title></rect>')
        if bar.spread:
            mid = x + width / 2
            hi, lo = y_at(bar.value + bar.spread), y_at(bar.value - bar.spread)
            drawn += (f'<line class="chart-whisker" x1="{mid:.1f}" y1="{hi:.1f}" x2="{mid:.1f}" y2="{lo:.1f}"/>'
                      f'<line class="chart-whisker" x1="{mid - 6:.1f}" y1="{hi:.1f}" x2="{mid + 6:.1f}" y2="{hi:.1f}"/>'
                      f'<line class="chart-whisker" x1="{mid - 6:.1f}" y1="{lo:.1f}" x2="{mid + 6:.1f}" y2="{lo:.1f}"/>')
        drawn += (f'<text class="chart-tick" x="{x + width / 2:.1f}" y="{_H - 8}" text-anchor="middle">'
                  f'{escape(bar.label[-12:])}</text>')
    summary = escape(f"{title}: " + ", ".join(f"{b.label} {_label(b.value)}" + (f" ± {_label(b.spread)}"
                                                                                 if b.spread else "") for b in bars))
    return Markup(
        f'<svg class="chart" viewBox="0 0 {_W} {_H}" role="img" aria-label="{summary}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
        f'<rect class="chart-frame" x="{_LEFT}" y="{_TOP}" width="{plot_w}" height="{plot_h}"/>'
        f'<text class="chart-tick" x="{_LEFT - 4}" y="{_TOP + 10}" text-anchor="end">{_label(y1)}</text>'
        f'<text class="chart-tick" x="{_LEFT - 4}" y="{bottom}" text-anchor="end">{_label(y0)}</text>'
        f'{drawn}</svg>'
    )
