"""The comparison page (`/ui/compare`): up to 20 of the caller's runs side by side — every metric they share as
overlaid curves (one colour per run, each run named by the inputs that set it apart), then a table of their inputs
and final metrics with the cells that differ marked. The URL is the state (`?runs=`, `?sweep=`, `?exp=`).

Tier: use case (reads through `job_reads`, `run_series` and `sweep_reads`, as the caller; no HTTP here). A run the
caller may not see is the services' NotFound (a 404 page); too many runs is a Rejected naming the limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ...contract import Problem
from ..services.context import Runtime
from ..services.errors import Rejected
from ..services.jobs import reads as job_reads
from ..services.jobs import run_series
from ..services.runs.inputs import NOT_COMPARED, flat_inputs, run_inputs
from ..services.sweeps import reads as sweep_reads
from .charts import Curve, Plot, line_plot
from .pages import frame
from .render import render
from .sessions import WebCaller

__all__ = ["MAX_RUNS", "Row", "compare_page", "run_inputs_flat"]

MAX_RUNS = 20
_PICK_ROWS = 50  # the form without runs: the caller's newest jobs to tick


@dataclass(frozen=True)
class Row:
    """One row of the comparison table: its name, each run's value ("" when the run has none), whether they differ."""

    name: str
    values: tuple[str, ...]
    differs: bool


_HYPER = "hyperparameters."


def run_inputs_flat(rt: Runtime, caller: WebCaller, refs: Sequence[str]) -> list[dict[str, str]]:
    """Return each run's inputs as flat `{name: text}` (`services.runs.inputs.flat_inputs`, the rows the diff
    compares too), leaving out the merged config's rows that every run shares (the config is long; its differing
    rows stay) and what only names a run (its engine reference, its bundle's digest)."""
    flat = [flat_inputs(run_inputs(rt, user=caller.user, ref=ref)) for ref in refs]
    keys = dict.fromkeys(k for each in flat for k in each)
    same = {k for k in keys if k.startswith("config.") and len({each.get(k) for each in flat}) == 1}
    return [{k: v for k, v in each.items() if k not in same and k not in NOT_COMPARED} for each in flat]


def _refs(rt: Runtime, caller: WebCaller, runs: Sequence[str], sweep: str, exp: str) -> list[str]:
    if sweep:
        return [run["job_id"] for run in sweep_reads.show(rt, user=caller.user, sweep_id=sweep)["runs"]]
    if exp:
        return [row.job_ref for row in job_reads.list_job_rows(rt, user=caller.user, limit=MAX_RUNS, exp=exp)]
    named = [part.strip() for given in runs for part in given.split(",") if part.strip()]
    return list(dict.fromkeys(named))


def _names(inputs: list[dict[str, str]], refs: list[str]) -> list[str]:
    """Each run named by the inputs that differ between the runs (hyperparameters first), else by its job."""
    keys = list(dict.fromkeys(k for each in inputs for k in each))
    differing = [k for k in keys if len({each.get(k, "") for each in inputs}) > 1]
    if any(not k.startswith("config.") for k in differing):  # the merged config repeats what the inputs set
        differing = [k for k in differing if not k.startswith("config.")]
    differing.sort(key=lambda k: (not k.startswith(_HYPER), keys.index(k)))
    names = [", ".join(f"{k.removeprefix(_HYPER)}={each.get(k, '—')}" for k in differing[:3]) or ref
             for each, ref in zip(inputs, refs, strict=True)]
    return [name if names.count(name) == 1 else f"{ref} {name}" for name, ref in zip(names, refs, strict=True)]


def _rows(names: Iterable[str], columns: list[dict[str, str]]) -> list[Row]:
    rows = []
    for name in names:
        values = tuple(column.get(name, "") for column in columns)
        rows.append(Row(name, values, len(set(values)) > 1))
    return rows


def compare_page(rt: Runtime, caller: WebCaller, *, runs: Sequence[str] = (), sweep: str = "", exp: str = "") -> str:
    """Return the comparison of the runs named (`runs`, each a comma list, or a sweep's runs, or an experiment's
    newest 20): charts of the metrics they share (then of those only some have) and the inputs and final metrics
    table; without runs, a form to choose them. NotFound for a run that is not the caller's; Rejected beyond 20."""
    refs = _refs(rt, caller, runs, sweep, exp)
    if len(refs) > MAX_RUNS:
        raise Rejected(f"Too many runs to compare: {len(refs)}, at most {MAX_RUNS}",
                       [Problem("runs", "too_many_runs", f"{len(refs)} runs named; a comparison shows at most "
                                f"{MAX_RUNS}", "name fewer runs, or compare a sweep or an experiment")])
    if not refs:
        jobs = job_reads.list_job_rows(rt, user=caller.user, limit=_PICK_ROWS)
        return render("compare.html", **frame(caller, "compare"), jobs=jobs, runs=[], plots=[], others=[], rows=[],
                      metric_rows=[], sweep=sweep, exp=exp)
    views = [job_reads.show(rt, user=caller.user, ref=ref) for ref in refs]
    refs = [view["job_ref"] for view in views]
    series = run_series.runs_series(rt, user=caller.user, refs=refs)
    inputs = run_inputs_flat(rt, caller, refs)
    names = _names(inputs, refs)
    per_run = [series[view["run_id"]] for view in views]
    keys = sorted({key for each in per_run for key in each})
    shared = [k for k in keys if all(k in each for each in per_run)]

    def plot(key: str) -> Plot:
        return line_plot(key, [Curve(name, ref, each[key]) for name, ref, each in zip(names, refs, per_run, strict=True)
                               if key in each])

    finals = [{key: f"{s['y'][-1]:.6g}" for key, s in each.items() if s["y"]} for each in per_run]
    runs_shown = [{"ref": ref, "name": name, "view": view} for ref, name, view in zip(refs, names, views, strict=True)]
    return render("compare.html", **frame(caller, "compare"), jobs=[], runs=runs_shown,
                  plots=[plot(k) for k in shared], others=[plot(k) for k in keys if k not in shared],
                  rows=_rows(dict.fromkeys(k for each in inputs for k in each), inputs),
                  metric_rows=_rows(keys, finals), sweep=sweep, exp=exp)
