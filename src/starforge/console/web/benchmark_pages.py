"""The compare page of the web console: a table of each suite's metrics with every compared run's mean, spread, n
and verdict against the first, and a bar chart per suite (a run's own scores table is part of its job page).

Tier: use case (the reads go through `benchmarks.reads`, which owns its transactions; no HTTP here). The verdicts
are the comparison rule's (`benchmarks.compare`), never recomputed here; a run the caller may not see is a 404.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from ..services.benchmarks import reads as bench_reads
from ..services.context import Runtime
from .charts import Bar, bar_chart
from .pages import frame
from .render import render
from .sessions import WebCaller

__all__ = ["SuiteChart", "compare_page", "suite_charts"]


@dataclass(frozen=True)
class SuiteChart:
    """One suite's metric drawn for every compared run."""

    benchmark: str
    metric: str
    svg: Markup


def suite_charts(body: dict[str, Any]) -> list[SuiteChart]:
    """Return one bar chart per (suite, metric) of a comparison: a bar per run with a score, its spread a whisker."""
    charts = []
    for row in body["rows"]:
        bars = [Bar(cell["run_id"], cell["mean"], cell["spread"]) for cell in row["runs"] if cell["mean"] is not None]
        charts.append(SuiteChart(row["benchmark"], row["metric"],
                                 bar_chart(f"{row['benchmark']} {row['metric']}", bars)))
    return charts


def compare_page(rt: Runtime, caller: WebCaller, *, runs: str) -> str:
    """Return the compare page of the caller's runs named in `runs` (comma-separated; the first is the baseline);
    without runs, the caller's runs that reported scores, to choose from."""
    scored = bench_reads.scored_runs(rt, user=caller.user)["runs"]
    if not runs.strip():
        return render("benchmarks_compare.html", **frame(caller, "benchmarks"), comparison=None, charts=[],
                      scored=scored)
    body = bench_reads.compare_runs(rt, user=caller.user, runs=runs)
    return render("benchmarks_compare.html", **frame(caller, "benchmarks"), comparison=body,
                  charts=suite_charts(body), scored=scored)
