"""Turn lm-eval's results into the scores the job reports: one `{benchmark, metric, value, stderr?, repeat}` per
suite, metric and repetition, read from lm-eval's `<metric>,<filter>` keys."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ._suites import Chosen

__all__ = ["metric_key", "scores_of"]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def metric_key(task_results: Mapping[str, Any], metric: str) -> str | None:
    """Return lm-eval's key of `metric` in one task's results: `metric` as written when it names a filter
    (`exact_match,strict-match`), else `<metric>,none`, else the first `<metric>,<filter>`; None when absent."""
    if "," in metric:
        return metric if metric in task_results else None
    if f"{metric},none" in task_results:
        return f"{metric},none"
    return next((key for key in task_results if key.startswith(f"{metric},")), None)


def scores_of(results: Mapping[str, Mapping[str, Any]], chosen: Sequence[Chosen], repeat: int) -> tuple[
        list[dict[str, Any]], list[str]]:
    """Return the scores of one repetition and the metrics missing; `results` holds lm-eval's `results` mapping
    per pack folder."""
    scores: list[dict[str, Any]] = []
    missing: list[str] = []
    for suite in chosen:
        task = (results.get(suite.path) or {}).get(suite.task)
        task = task if isinstance(task, Mapping) else {}
        for metric in suite.metrics:
            key = metric_key(task, metric)
            value = _number(task.get(key)) if key else None
            if key is None or value is None:
                missing.append(f"{suite.suite}/{metric}")
                continue
            name, _, flt = key.partition(",")
            score: dict[str, Any] = {"benchmark": suite.suite, "metric": metric, "value": value, "repeat": repeat}
            stderr = _number(task.get(f"{name}_stderr,{flt}"))
            if stderr is not None:
                score["stderr"] = stderr
            scores.append(score)
    return scores, missing
