"""Sweep points: grid products, random samples typed by the recipe's parameter kinds, and every usage mistake."""

from __future__ import annotations

import math

from starforge.lab.sweep_points import MAX_POINTS, Range, parse_grid, parse_ranges, point_sets, sweep_points
from starforge.recipes import parse_set

KINDS = {"learning_rate": "float", "seed": "int", "max_num_steps": "int", "optimizer": "enum"}


def test_a_grid_is_the_cartesian_product_first_axis_slowest() -> None:
    axes, problems = parse_grid(["learning_rate=0.05,0.1", "seed=1,2"])
    assert not problems
    points, problems = sweep_points(axes, [], 0, seed=0, kinds=KINDS)
    assert not problems
    assert points == [{"learning_rate": "0.05", "seed": "1"}, {"learning_rate": "0.05", "seed": "2"},
                      {"learning_rate": "0.1", "seed": "1"}, {"learning_rate": "0.1", "seed": "2"}]
    assert point_sets(points[3]) == ("learning_rate=0.1", "seed=2")
    typed, _ = parse_set(point_sets(points[3]))
    assert typed == {"learning_rate": 0.1, "seed": 2}  # typed exactly as --set types them


def test_random_samples_stay_in_range_keep_ints_ints_and_repeat_with_the_seed() -> None:
    ranges, problems = parse_ranges(["learning_rate=1e-4:1e-1:log", "seed=1:9"])
    assert not problems and ranges[0].log and not ranges[1].log
    points, problems = sweep_points([], ranges, 20, seed=7, kinds=KINDS)
    assert not problems and len(points) == 20
    for point in points:
        typed, set_problems = parse_set(point_sets(point))
        assert not set_problems
        assert isinstance(typed["learning_rate"], float) and 1e-4 <= typed["learning_rate"] <= 1e-1
        assert isinstance(typed["seed"], int) and 1 <= typed["seed"] <= 9
    again, _ = sweep_points([], ranges, 20, seed=7, kinds=KINDS)
    other, _ = sweep_points([], ranges, 20, seed=8, kinds=KINDS)
    assert again == points and other != points
    # log-uniform: about half the samples fall below the geometric middle (1e-2.5), far more than uniform would
    low = sum(1 for p in points if float(p["learning_rate"]) < math.sqrt(1e-4 * 1e-1))
    assert low >= 4


def test_a_float_sample_is_always_a_float_literal() -> None:
    points, _ = sweep_points([], [Range("learning_rate", 3.0, 3.0)], 1, seed=0, kinds=KINDS)
    assert points == [{"learning_rate": "3.0"}]


def test_random_points_cross_the_grid() -> None:
    axes, _ = parse_grid(["seed=1,2"])
    ranges, _ = parse_ranges(["learning_rate=0.01:0.1"])
    points, problems = sweep_points(axes, ranges, 3, seed=1, kinds=KINDS)
    assert not problems and len(points) == 6
    assert [p["seed"] for p in points] == ["1", "2"] * 3
    assert points[0]["learning_rate"] == points[1]["learning_rate"]


def test_usage_mistakes_are_problems_at_their_flag() -> None:
    _, problems = parse_grid(["learning_rate", "seed=1,,2", "seed=1", "seed=2"])
    assert [p.field for p in problems] == ["--grid", "--grid", "--grid"]
    assert all(p.code == "invalid_set" and p.hint for p in problems)
    _, problems = parse_ranges(["a=1", "b=2:1", "c=0:1:log", "d=x:1", "e=1:2:cubic"])
    assert len(problems) == 5 and {p.field for p in problems} == {"--range"}
    _, problems = sweep_points([], [], 0, seed=0, kinds=KINDS)
    assert [p.field for p in problems] == ["--grid"]
    _, problems = sweep_points([], [Range("optimizer", 0, 1)], 2, seed=0, kinds=KINDS)
    assert "only int and float" in problems[0].message
    _, problems = sweep_points([], [Range("seed", 1.2, 1.8)], 2, seed=0, kinds=KINDS)
    assert "no integer" in problems[0].message
    _, problems = sweep_points([], [Range("seed", 1, 2)], 0, seed=0, kinds=KINDS)
    assert "--random" in problems[0].message
    axes, _ = parse_grid(["seed=1,2"])
    _, problems = sweep_points(axes, [Range("seed", 1, 2)], 2, seed=0, kinds=KINDS)
    assert "also a --grid axis" in problems[0].message
    big, _ = parse_grid([f"k{i}=1,2,3,4" for i in range(5)])
    _, problems = sweep_points(big, [], 0, seed=0, kinds=KINDS)
    assert str(MAX_POINTS) in problems[0].message
