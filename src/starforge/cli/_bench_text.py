"""How `sf bench` and `sf job status` say benchmark results in words: the suites offered, a run's scores, and a
comparison of runs (each row's cells with their verdict against the baseline).

Pure text from the shapes the console serves (`GET /api/benchmarks`, a job's `benchmarks`, `GET
/api/benchmarks/compare`); the comparison's verdicts are the console's, never recomputed here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["COMPARE_HEADERS", "SCORE_HEADERS", "SUITE_HEADERS", "compare_rows", "score_rows", "suite_rows"]

SUITE_HEADERS = ("SUITE", "METRICS", "PACK", "DESCRIPTION")
SCORE_HEADERS = ("SUITE", "METRIC", "VALUE", "SPREAD", "REPEATS")
COMPARE_HEADERS = ("SUITE", "METRIC", "RUN", "MEAN", "SPREAD", "N", "DELTA", "VERDICT")


def _num(value: Any, signed: bool = False) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def suite_rows(suites: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Return one row per offered suite: its name, metrics, pack (with its version) and description."""
    rows = []
    for s in suites:
        pack = f"{s.get('pack', '')}@{s.get('pack_version', '')}" if s.get("pack_version") else str(s.get("pack", ""))
        rows.append([str(s.get("name", "")), ",".join(map(str, s.get("metrics") or [])), pack + (
            " (builtin)" if s.get("builtin") else ""), str(s.get("description", ""))])
    return rows


def score_rows(summary: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Return one row per (suite, metric) of a run's `benchmark_summary` (the console's rule): the mean over its
    repeats, their spread and count."""
    rows = []
    for row in summary:
        cell = (row.get("runs") or [{}])[0]
        rows.append([str(row.get("benchmark", "")), str(row.get("metric", "")), _num(cell.get("mean")),
                     _num(cell.get("spread")), str(cell.get("n", 0))])
    return rows


def compare_rows(body: Mapping[str, Any]) -> list[list[str]]:
    """Return one row per run of each (suite, metric) of a comparison, the baseline first."""
    rows = []
    for row in body.get("rows") or []:
        for cell in row.get("runs") or []:
            verdict = str(cell.get("verdict", ""))
            if verdict == "unmeasured":
                verdict = "no variance measured"
            rows.append([str(row.get("benchmark", "")), str(row.get("metric", "")), str(cell.get("run_id", "")),
                         _num(cell.get("mean")), _num(cell.get("spread")), str(cell.get("n", 0)),
                         _num(cell.get("delta"), signed=True), verdict])
    return rows
