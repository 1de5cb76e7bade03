"""The one comparison rule of benchmark scores: per suite and metric, each run's mean over its repeats, their spread
and count, and a verdict of each run against the first (the baseline).

Tier: shared (pure: no database, no I/O). The rule, in order:

1. A run's value for a (suite, metric) is the mean of its repeats; its spread is their sample standard deviation
   (None with a single repeat: the evaluation's own variance was not measured).
2. The first run is the baseline (verdict `baseline`). Another run without a score there is `missing`.
3. When the baseline or the run has a single repeat, the verdict is `unmeasured` ("no variance measured"): a
   difference cannot be told from the evaluation's noise.
4. Otherwise the noise band is twice the larger of the two spreads; a difference within it is `same`, beyond it
   `better` or `worse` by the metric's direction (lower is better for perplexities, losses and error rates).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BAND_SPREADS", "UNMEASURED_NOTE", "Cell", "Point", "Row", "compare", "higher_is_better", "summarise"]

BAND_SPREADS = 2.0  # a difference counts beyond this many spreads (the larger of the two runs')
_LOWER_BETTER = ("perplexity", "bits_per_byte", "loss", "error", "ter")
UNMEASURED_NOTE = "no variance measured: run both with --repeat 2 or more to call a difference"


@dataclass(frozen=True)
class Point:
    """One stored score: a run's value of a metric of a suite in one repeat."""

    run_id: str
    benchmark: str
    metric: str
    value: float
    repeat: int = 0
    stderr: float | None = None


@dataclass(frozen=True)
class Cell:
    """One run's summary on a (suite, metric) and its verdict against the baseline."""

    run_id: str
    n: int
    mean: float | None
    spread: float | None
    values: tuple[float, ...] = ()
    delta: float | None = None
    verdict: str = "missing"
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return the wire shape of the cell."""
        return {"run_id": self.run_id, "n": self.n, "mean": self.mean, "spread": self.spread,
                "values": list(self.values), "delta": self.delta, "verdict": self.verdict, "note": self.note}


@dataclass(frozen=True)
class Row:
    """The cells of every compared run on one (suite, metric), the baseline first."""

    benchmark: str
    metric: str
    higher_is_better: bool
    cells: tuple[Cell, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """Return the wire shape of the row."""
        return {"benchmark": self.benchmark, "metric": self.metric, "higher_is_better": self.higher_is_better,
                "runs": [cell.to_dict() for cell in self.cells]}


def higher_is_better(metric: str) -> bool:
    """Return whether a larger value of `metric` is the better one (perplexities, losses, error rates: lower)."""
    name = metric.lower().split(",", 1)[0]
    return not any(word in name for word in _LOWER_BETTER)


def summarise(run_id: str, values: Sequence[float]) -> Cell:
    """Return a run's cell before any verdict: mean, sample standard deviation (None under two values) and n."""
    if not values:
        return Cell(run_id, 0, None, None)
    mean = math.fsum(values) / len(values)
    spread = (math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))
              if len(values) > 1 else None)
    return Cell(run_id, len(values), mean, spread, tuple(values))


def _judge(base: Cell, cell: Cell, higher: bool) -> Cell:
    if cell.mean is None or base.mean is None:
        return Cell(cell.run_id, cell.n, cell.mean, cell.spread, cell.values, None, "missing",
                    "no score for this metric" if cell.mean is None else "the baseline has no score for this metric")
    delta = cell.mean - base.mean
    if base.spread is None or cell.spread is None:
        return Cell(cell.run_id, cell.n, cell.mean, cell.spread, cell.values, delta, "unmeasured", UNMEASURED_NOTE)
    band = BAND_SPREADS * max(base.spread, cell.spread)
    if abs(delta) <= band:
        verdict = "same"
        note = f"within the evaluation's own variance (±{band:.4g})"
    else:
        verdict = "better" if (delta > 0) == higher else "worse"
        note = f"beyond the evaluation's own variance (±{band:.4g})"
    return Cell(cell.run_id, cell.n, cell.mean, cell.spread, cell.values, delta, verdict, note)


def compare(runs: Sequence[str], points: Iterable[Point]) -> list[Row]:
    """Return one row per (suite, metric) any of `runs` reported, sorted by name, each with a cell per run in the
    order given and the verdicts of the rule in this module's docstring (the first run is the baseline)."""
    values: dict[tuple[str, str], dict[str, dict[int, float]]] = {}
    for point in points:
        if point.run_id in runs:
            values.setdefault((point.benchmark, point.metric), {}).setdefault(point.run_id, {})[point.repeat] = point.value
    rows: list[Row] = []
    for (benchmark, metric), by_run in sorted(values.items()):
        higher = higher_is_better(metric)
        summaries = [summarise(run, [v for _, v in sorted(by_run.get(run, {}).items())]) for run in runs]
        base = summaries[0]
        first = Cell(base.run_id, base.n, base.mean, base.spread, base.values, None,
                     "baseline" if base.mean is not None else "missing",
                     "" if base.mean is not None else "no score for this metric")
        cells = (first, *(_judge(base, cell, higher) for cell in summaries[1:]))
        rows.append(Row(benchmark, metric, higher, cells))
    return rows
