"""Sweep points: the hyperparameter points of `sf sweep` (a grid's cartesian product crossed with random samples),
each as the `--set` items it adds; pure, and typed only later by `--set` typing (`recipes.parse_set`).

A grid axis is `KEY=V1,V2,...` (values kept as typed). A range is `KEY=LO:HI` or `KEY=LO:HI:log` (log-uniform, both
bounds above zero); a sampled value is an integer for a recipe parameter of type `int`, a float otherwise.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from starforge.contract import Problem

__all__ = ["MAX_POINTS", "Axis", "Range", "parse_grid", "parse_ranges", "point_sets", "sweep_points"]

MAX_POINTS = 256  # points of one sweep: a larger search is several sweeps (and several decisions)
_NUMERIC = frozenset({"int", "float"})


@dataclass(frozen=True)
class Axis:
    """One `--grid` axis: a hyperparameter and its values, as typed on the command line."""

    key: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Range:
    """One `--range`: a hyperparameter sampled in [low, high], uniformly or log-uniformly."""

    key: str
    low: float
    high: float
    log: bool = False


def _split_key(item: str, flag: str, example: str) -> tuple[str, str, Problem | None]:
    key, eq, rest = item.partition("=")
    key, rest = key.strip(), rest.strip()
    if not eq or not key or not rest:
        return "", "", Problem(flag, "invalid_set", f"{item!r} must be KEY={example.split('=', 1)[1]}",
                               f"write {flag} {example}")
    return key, rest, None


def parse_grid(items: Sequence[str]) -> tuple[list[Axis], list[Problem]]:
    """Return the `--grid KEY=V1,V2` axes in the given order and a problem per malformed or repeated item."""
    axes: list[Axis] = []
    problems: list[Problem] = []
    for item in items:
        key, rest, problem = _split_key(item, "--grid", "--grid learning_rate=0.05,0.1")
        if problem is not None:
            problems.append(problem)
            continue
        values = tuple(v.strip() for v in rest.split(","))
        if any(not v for v in values):
            problems.append(Problem("--grid", "invalid_set", f"{key}: an empty value in {rest!r}",
                                    "separate the values with single commas: --grid seed=1,2,3"))
        elif any(a.key == key for a in axes):
            problems.append(Problem("--grid", "invalid_set", f"{key} is given twice",
                                    f"list every value once: --grid {key}=V1,V2"))
        else:
            axes.append(Axis(key, tuple(dict.fromkeys(values))))
    return axes, problems


def _bound(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_ranges(items: Sequence[str]) -> tuple[list[Range], list[Problem]]:
    """Return the `--range KEY=LO:HI[:log]` ranges and a problem per malformed, empty or repeated range."""
    ranges: list[Range] = []
    problems: list[Problem] = []
    for item in items:
        key, rest, problem = _split_key(item, "--range", "--range learning_rate=1e-4:1e-1:log")
        if problem is not None:
            problems.append(problem)
            continue
        parts = [p.strip() for p in rest.split(":")]
        log = len(parts) == 3 and parts[2].lower() == "log"
        low, high = (_bound(parts[0]), _bound(parts[1])) if len(parts) in (2, 3) else (None, None)
        if low is None or high is None or (len(parts) == 3 and not log):
            problems.append(Problem("--range", "invalid_set", f"{key}: {rest!r} is not LO:HI or LO:HI:log",
                                    "write finite numbers: --range learning_rate=1e-4:1e-1:log"))
        elif low > high:
            problems.append(Problem("--range", "invalid_set", f"{key}: the low bound {low:g} is above the high {high:g}",
                                    f"write --range {key}={high:g}:{low:g}"))
        elif log and low <= 0:
            problems.append(Problem("--range", "invalid_set", f"{key}: a log range needs bounds above zero",
                                    "drop :log, or start the range above 0"))
        elif any(r.key == key for r in ranges):
            problems.append(Problem("--range", "invalid_set", f"{key} is given twice", "give one range per key"))
        else:
            ranges.append(Range(key, low, high, log))
    return ranges, problems


def _sample(rng: random.Random, spec: Range, kind: str) -> str:
    if kind == "int":
        low, high = math.ceil(spec.low), math.floor(spec.high)
        if spec.log:
            value = round(math.exp(rng.uniform(math.log(max(low, 1)), math.log(max(high, 1)))))
            return str(min(max(value, low), high))
        return str(rng.randint(low, high))
    drawn = math.exp(rng.uniform(math.log(spec.low), math.log(spec.high))) if spec.log else rng.uniform(
        spec.low, spec.high)
    return repr(float(f"{drawn:.6g}"))  # six significant digits, and always a float literal ("3.0", "1e-05")


def _range_problems(ranges: Sequence[Range], kinds: Mapping[str, str]) -> list[Problem]:
    problems = []
    for spec in ranges:
        kind = kinds.get(spec.key, "float")
        if kind not in _NUMERIC:
            problems.append(Problem("--range", "invalid_set", f"{spec.key} is a {kind} parameter: only int and float "
                                    "parameters can be sampled", f"list its values with --grid {spec.key}=A,B"))
        elif kind == "int" and math.ceil(spec.low) > math.floor(spec.high):
            problems.append(Problem("--range", "invalid_set", f"{spec.key}: no integer lies in "
                                    f"[{spec.low:g}, {spec.high:g}]", "widen the range"))
    return problems


def sweep_points(axes: Sequence[Axis], ranges: Sequence[Range], count: int, *, seed: int,
                 kinds: Mapping[str, str]) -> tuple[list[dict[str, str]], list[Problem]]:
    """Return every point `{key: value text}` — each grid combination (first axis slowest) crossed with each of
    `count` random samples drawn with `seed` — or the problems; `kinds` maps a parameter to its recipe type."""
    problems: list[Problem] = []
    if not axes and not count:
        problems.append(Problem("--grid", "invalid_set", "a sweep needs --grid axes or --random N with --range",
                                "write --grid learning_rate=0.05,0.1 (or --random 8 --range learning_rate=1e-4:1e-1:log)"))
    if count and not ranges:
        problems.append(Problem("--random", "invalid_set", f"--random {count} has no --range to sample",
                                "add --range KEY=LO:HI[:log]"))
    if ranges and not count:
        problems.append(Problem("--range", "invalid_set", "--range needs --random N (how many points to sample)",
                                "add --random 8"))
    problems += [Problem("--range", "invalid_set", f"{r.key} is also a --grid axis", "keep it in one of the two")
                 for r in ranges if any(a.key == r.key for a in axes)]
    problems += _range_problems(ranges, kinds)
    total = math.prod(len(a.values) for a in axes) * max(count, 1)
    if total > MAX_POINTS:
        problems.append(Problem("--grid", "invalid_set", f"the sweep has {total} points; at most {MAX_POINTS} are "
                                "submitted at once", "narrow the grid or lower --random, or split the sweep"))
    if problems:
        return [], problems
    rng = random.Random(seed)
    samples = [{r.key: _sample(rng, r, kinds.get(r.key, "float")) for r in ranges} for _ in range(count)] or [{}]
    grid = [dict(zip([a.key for a in axes], combo, strict=True))
            for combo in itertools.product(*(a.values for a in axes))]
    return [{**combo, **sample} for sample in samples for combo in grid], []


def point_sets(point: Mapping[str, str]) -> tuple[str, ...]:
    """Return the `--set` items that give a point its values (appended after the sweep's own `--set` items)."""
    return tuple(f"{key}={value}" for key, value in point.items())
