"""The sweeps pages: the caller's sweeps, and one sweep's runs in a table of hyperparameters and final metrics, ranked
by a chosen metric (`sweep_reads`, exactly as `GET /api/sweeps[/{id}]`) and sortable by any column.

Tier: use case (the reads go through `sweep_reads`, which owns its transactions; no HTTP here). A sweep the caller
may not see is the service's NotFound; sorting by a column only orders the rows the service returned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from ...contract import Problem
from ..services.context import Runtime
from ..services.errors import Rejected
from ..services.jobs import run_series
from ..services.sweeps import reads as sweep_reads
from .charts import Curve, Plot, line_plot, scatter_plot
from .pages import frame
from .render import render
from .sessions import WebCaller

__all__ = ["Column", "sweep_page", "sweep_plots", "sweeps_page"]

_RANK = "rank"
_FIXED = {"rank": "Rank", "job": "Job", "status": "Status"}


@dataclass(frozen=True)
class Column:
    """One header of the runs table: its label, its sort key, the link sorting by it and its `aria-sort` value."""

    label: str
    key: str
    href: str
    aria_sort: str  # "ascending", "descending" or "" (not the sorted column)


def sweeps_page(rt: Runtime, caller: WebCaller, *, limit: int = 50) -> str:
    """Return the caller's sweeps, newest first, each with its runs counted by status."""
    sweeps = sweep_reads.list_sweeps(rt, user=caller.user, limit=limit)["sweeps"]
    return render("sweeps.html", **frame(caller, "sweeps"), sweeps=sweeps, limit=limit)


def _shown(rt: Runtime, caller: WebCaller, sweep_id: str, metric: str) -> tuple[dict[str, Any], list[Problem]]:
    try:
        return sweep_reads.show(rt, user=caller.user, sweep_id=sweep_id, metric=metric), []
    except Rejected as refused:  # a metric no run reported: ranked by the default, the problem shown at its field
        return sweep_reads.show(rt, user=caller.user, sweep_id=sweep_id), list(refused.problems)


def _cell(run: dict[str, Any], key: str) -> Any:
    kind, _, name = key.partition(":")
    if kind == "param":
        return run["params"].get(name)
    if kind == "metric":
        return run["metrics"].get(name)
    return {"rank": run["rank"], "job": run["job_id"], "status": run["status"]}.get(key)


def _order(value: Any) -> tuple[int, Any]:
    """Numbers before text; a missing value sorts last whichever the direction (see `_sorted`)."""
    if isinstance(value, bool):
        return 1, str(value)
    if isinstance(value, int | float):
        return 0, float(value)
    return 1, str(value)


def _sorted(runs: list[dict[str, Any]], key: str, descending: bool) -> list[dict[str, Any]]:
    if key == _RANK and not descending:
        return runs  # the service's ranking, unranked runs last
    present = [r for r in runs if _cell(r, key) is not None]
    missing = [r for r in runs if _cell(r, key) is None]
    return sorted(present, key=lambda r: _order(_cell(r, key)), reverse=descending) + missing


def _columns(sweep_id: str, keys: list[str], metric: str, sort: str, descending: bool) -> list[Column]:
    columns = []
    for key in keys:
        label = _FIXED.get(key) or key.partition(":")[2]
        sorted_here = key == sort
        wanted = "asc" if not sorted_here or descending else "desc"
        query = urlencode({"metric": metric, "sort": key, "dir": wanted})
        aria = ("descending" if descending else "ascending") if sorted_here else ""
        columns.append(Column(label, key, f"/ui/sweeps/{sweep_id}?{query}#runs", aria))
    return columns


def _run_name(run: dict[str, Any], keys: list[str]) -> str:
    return ", ".join(f"{k}={run['params'][k]}" for k in keys if k in run["params"]) or run["job_id"]


def sweep_plots(rt: Runtime, caller: WebCaller, sweep: dict[str, Any]) -> tuple[list[Plot], list[Plot]]:
    """Return the sweep's charts: its ranking metric over steps, one curve per run that reported it, and one
    scatter per varied parameter of that parameter against the metric's final value (runs without one left out)."""
    metric, runs, keys = sweep["metric"], sweep["runs"], sweep["keys"]
    if not metric or not runs:
        return [], []
    series = run_series.runs_series(rt, user=caller.user, refs=[run["job_id"] for run in runs])
    curves = [Curve(_run_name(run, keys), run["job_id"], series[run["job_id"]][metric]) for run in runs
              if metric in series[run["job_id"]]]
    lines = [line_plot(metric, curves)] if curves else []
    scatters = []
    for key in keys:
        points = [(_run_name(run, keys), run["job_id"], run["params"][key], float(run["value"])) for run in runs
                  if key in run["params"] and isinstance(run["value"], int | float)]
        if points:
            scatters.append(scatter_plot(key, metric, points))
    return lines, scatters


def sweep_page(rt: Runtime, caller: WebCaller, *, sweep_id: str, metric: str = "", sort: str = _RANK,
               direction: str = "asc") -> str:
    """Return one sweep's page: its runs with their hyperparameters and final metrics, ranked by `metric` (the
    recipe's first primary metric by default), the best run marked, sorted by the column `sort` (`rank`, `job`,
    `status`, `param:<name>` or `metric:<name>`) in `direction` (`asc` or `desc`); NotFound for a sweep that is not
    the caller's."""
    sweep, problems = _shown(rt, caller, sweep_id, metric)
    runs = sweep["runs"]
    metrics = sorted({key for run in runs for key in run["metrics"]} | ({sweep["metric"]} - {""}))
    keys = [*_FIXED, *(f"param:{k}" for k in sweep["keys"]), *(f"metric:{m}" for m in metrics)]
    sort = sort if sort in keys else _RANK
    descending = direction == "desc"
    columns = _columns(sweep["sweep_id"], keys, sweep["metric"], sort, descending)
    rows = [(run, [_cell(run, key) for key in keys]) for run in _sorted(runs, sort, descending)]
    lines, scatters = sweep_plots(rt, caller, sweep)
    return render("sweep.html", **frame(caller, "sweeps"), sweep=sweep, rows=rows, columns=columns, metrics=metrics,
                  problems=problems, lines=lines, scatters=scatters)
