"""Benchmark reports as a job posts them (`services/benchmarks/scores.read_report`): checked whole, every problem at
its field path."""

from __future__ import annotations

import pytest

from starforge.console.services.benchmarks.scores import read_report
from starforge.console.services.errors import Rejected


def test_a_report_in_the_official_shape_with_our_optional_fields() -> None:
    report = read_report("r1", {"runner": "lm-eval", "model": "tiny", "scores": [
        {"benchmark": "basic-choice", "metric": "acc", "value": 0.5},
        {"benchmark": "basic-choice", "metric": "acc", "value": 0.75, "stderr": 0.1, "repeat": 1}]})
    assert report.runner == "lm-eval" and report.model == "tiny"
    assert [(p.repeat, p.value, p.stderr) for p in report.points] == [(0, 0.5, None), (1, 0.75, 0.1)]
    assert read_report("r1", {"repeat": 3, "scores": [{"benchmark": "b", "metric": "m", "value": 1}]}).points[0].repeat == 3


def test_every_problem_is_reported_at_its_field() -> None:
    with pytest.raises(Rejected) as caught:
        read_report("r1", {"runner": 5, "scores": [
            {"benchmark": "", "metric": "acc", "value": 1},
            {"benchmark": "b", "metric": "m", "value": float("nan")},
            {"benchmark": "b", "metric": "m", "value": True, "stderr": -1, "repeat": -2},
            "not an object",
            {"benchmark": "b", "metric": "m\x00", "value": 1}]})
    fields = [p.field for p in caught.value.problems]
    assert fields == ["runner", "scores[0].benchmark", "scores[1].value", "scores[2].value", "scores[2].stderr",
                      "scores[2].repeat", "scores[3]", "scores[4].metric"]
    assert all(p.hint for p in caught.value.problems)


def test_an_empty_or_duplicated_report_is_refused() -> None:
    with pytest.raises(Rejected) as caught:
        read_report("r1", {"scores": []})
    assert [p.field for p in caught.value.problems] == ["scores"]
    with pytest.raises(Rejected) as caught:
        read_report("r1", {"scores": [{"benchmark": "b", "metric": "m", "value": 1},
                                      {"benchmark": "b", "metric": "m", "value": 2}]})
    assert [(p.field, p.code) for p in caught.value.problems] == [("scores[1]", "duplicate")]
