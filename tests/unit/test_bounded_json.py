"""`json_depth_problem` and `load_json`: the console measures JSON nesting iteratively before it parses."""

from __future__ import annotations

import json

import pytest

from starforge.console.api.body import MAX_JSON_DEPTH, json_depth_problem, load_json
from starforge.contract import Problem


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_depth_at_the_bound_passes_and_one_more_is_refused() -> None:
    assert json_depth_problem(nested(MAX_JSON_DEPTH), "<body>") is None
    problem = json_depth_problem(nested(MAX_JSON_DEPTH + 1), "<body>")
    assert problem is not None and (problem.field, problem.code) == ("<body>", "json_too_deep") and problem.hint


def test_a_million_levels_are_measured_without_recursion() -> None:
    too_deep = Problem("spec", "json_too_deep", f"arrays and objects nest more than {MAX_JSON_DEPTH} levels deep",
                       f"flatten the document to at most {MAX_JSON_DEPTH} levels of nesting")
    assert json_depth_problem("[" * 1_000_000, "spec") == too_deep
    objects = '{"a":' * 500_000 + "1" + "}" * 500_000
    assert load_json(objects, "spec") == (None, [too_deep])  # measured and refused before `json.loads` could recurse


@pytest.mark.parametrize("text", [
    json.dumps({"s": "[" * 500}),
    json.dumps({"s": '\\"[[[[' * 100}),
    json.dumps([{"k": "]]]]{{{{"}] * 1000),
])
def test_brackets_inside_strings_do_not_count(text: str) -> None:
    assert json_depth_problem(text, "<body>") is None
    assert load_json(text, "<body>") == (json.loads(text), [])


@pytest.mark.parametrize("text", ['"' + "\\" * 10001, '"\\"' * 10000, '"unterminated [[[[', "\\"])
def test_unterminated_strings_and_stray_escapes_are_scanned(text: str) -> None:
    assert json_depth_problem(text, "<body>") is None
    value, problems = load_json(text, "<body>")
    assert value is None and [p.code for p in problems] == ["invalid_json"]


def test_load_json_reports_the_field() -> None:
    assert load_json(nested(200), "X-Forge-Meta")[1][0].field == "X-Forge-Meta"
    assert load_json(b"\xff\xfe\x00", "spec")[1][0].code == "invalid_json"
    assert load_json('{"a": 1, "a": 2}', "spec")[0] == {"a": 2}
