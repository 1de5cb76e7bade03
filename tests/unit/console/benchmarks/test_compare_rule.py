"""The comparison rule of benchmark scores (`services/benchmarks/compare.py`), decided in process."""

from __future__ import annotations

import math

import pytest

from starforge.console.services.benchmarks.compare import (
    UNMEASURED_NOTE,
    Point,
    compare,
    higher_is_better,
    summarise,
)


def _points(run: str, values: list[float], bench: str = "basic-arithmetic", metric: str = "exact_match") -> list[Point]:
    return [Point(run, bench, metric, v, i) for i, v in enumerate(values)]


def _verdicts(base: list[float], other: list[float], metric: str = "exact_match") -> str:
    [row] = compare(["a", "b"], _points("a", base, metric=metric) + _points("b", other, metric=metric))
    assert row.cells[0].verdict == "baseline"
    return row.cells[1].verdict


def test_mean_spread_and_n_over_repeats() -> None:
    cell = summarise("a", [0.5, 0.7, 0.6])
    assert cell.n == 3 and cell.mean == pytest.approx(0.6)
    assert cell.spread == pytest.approx(math.sqrt(((0.1) ** 2 + 0.1 ** 2) / 2))
    assert summarise("a", [0.5]).spread is None


def test_a_difference_beyond_the_spread_is_better_or_worse() -> None:
    assert _verdicts([0.50, 0.51, 0.49], [0.70, 0.71, 0.69]) == "better"
    assert _verdicts([0.70, 0.71, 0.69], [0.50, 0.51, 0.49]) == "worse"


def test_a_difference_within_the_spread_is_the_same() -> None:
    # a spread of 0.1 makes 0.05 noise, never a regression
    assert _verdicts([0.4, 0.5, 0.6], [0.35, 0.45, 0.55]) == "same"


def test_identical_repeats_measure_no_noise_so_any_difference_counts() -> None:
    assert _verdicts([0.5, 0.5], [0.5, 0.5]) == "same"
    assert _verdicts([0.5, 0.5], [0.52, 0.52]) == "better"


def test_a_single_repeat_says_no_variance_measured() -> None:
    [row] = compare(["a", "b"], _points("a", [0.5]) + _points("b", [0.9, 0.9]))
    cell = row.cells[1]
    assert cell.verdict == "unmeasured" and cell.note == UNMEASURED_NOTE
    assert cell.delta == pytest.approx(0.4)


def test_lower_is_better_for_perplexity_and_loss() -> None:
    assert not higher_is_better("word_perplexity") and not higher_is_better("loss")
    assert higher_is_better("acc") and higher_is_better("exact_match,strict-match")
    assert _verdicts([10.0, 10.1], [5.0, 5.1], metric="word_perplexity") == "better"


def test_a_run_without_the_metric_is_missing_and_rows_are_sorted() -> None:
    points = _points("a", [0.5, 0.5], bench="z-suite") + _points("a", [0.2], bench="a-suite", metric="acc")
    points += _points("b", [0.6, 0.6], bench="z-suite") + _points("other", [1.0], bench="z-suite")
    rows = compare(["a", "b"], points)
    assert [(r.benchmark, r.metric) for r in rows] == [("a-suite", "acc"), ("z-suite", "exact_match")]
    assert rows[0].cells[1].verdict == "missing" and rows[0].cells[1].mean is None
    assert [c.run_id for c in rows[1].cells] == ["a", "b"]  # a run not asked for is left out
    assert rows[1].cells[1].to_dict()["values"] == [0.6, 0.6]


def test_the_baseline_without_a_score_makes_every_other_missing() -> None:
    [row] = compare(["a", "b"], _points("b", [0.6, 0.6]))
    assert row.cells[0].verdict == "missing" and row.cells[1].verdict == "missing"
