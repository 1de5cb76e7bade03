"""Benchmark scores of runs: a report checked whole (every problem at its field path), stored as one row per
(run, suite, metric, repeat) — a repeated report replaces its rows — and read back in a stable order.

Tier: query (runs over the caller's session; never begins or commits a transaction).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ....contract import Problem
from ...store.models import BenchmarkScore, Job
from ..errors import Rejected
from .compare import Point, summarise

__all__ = ["BENCH_PREFIX", "EXTERNAL_PROFILE", "MAX_REPEAT", "MAX_SCORES", "Report", "bench_metrics", "points_of",
           "read_report", "record", "scored_runs", "scores_of"]

MAX_SCORES = 10_000
BENCH_PREFIX = "bench/"  # a run's benchmark score as a metric: `bench/<suite>/<metric>`
EXTERNAL_PROFILE = "external"  # the profile of an external evaluation's run (`external`): it only reports scores
MAX_REPEAT = 1_000
_TITLE = "Invalid benchmark report"


@dataclass(frozen=True)
class Report:
    """A checked report: who ran it (`runner`, `model`) and its points (all of one run)."""

    runner: str
    model: str
    points: tuple[Point, ...]


def _text(problems: list[Problem], value: Any, where: str, *, limit: int, required: bool) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()) or "\x00" in value or len(value) > limit:
        problems.append(Problem(where, "invalid_request", f"{where} must be {'non-empty ' if required else ''}text "
                                                          f"of at most {limit} characters without NUL",
                                "e.g. \"basic-arithmetic\"" if required else "or leave it out"))
        return ""
    return value.strip()


def _number(problems: list[Problem], value: Any, where: str, *, required: bool) -> float | None:
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        problems.append(Problem(where, "invalid_request", f"{where} must be a finite number",
                                "send the score as a JSON number, e.g. 0.75"))
        return None
    return float(value)


def _repeat(problems: list[Problem], value: Any, where: str, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REPEAT:
        problems.append(Problem(where, "invalid_request", f"{where} must be an integer from 0 to {MAX_REPEAT}",
                                "number the repetitions of the evaluation from 0"))
        return default
    return value


def read_report(run_id: str, body: dict[str, Any]) -> Report:
    """Return the report in a `{runner, model, scores: [{benchmark, metric, value, stderr?, repeat?}], repeat?}`
    body; raise Rejected (400) with every problem at its field path (nothing is stored then)."""
    problems: list[Problem] = []
    runner = _text(problems, body.get("runner"), "runner", limit=64, required=False)
    model = _text(problems, body.get("model"), "model", limit=4096, required=False)
    default_repeat = _repeat(problems, body.get("repeat"), "repeat", 0)
    scores = body.get("scores")
    points: list[Point] = []
    if not isinstance(scores, list) or not scores:
        problems.append(Problem("scores", "invalid_request", "scores must be a non-empty list of "
                                                             "{benchmark, metric, value}",
                                'e.g. [{"benchmark": "basic-arithmetic", "metric": "exact_match", "value": 0.5}]'))
    elif len(scores) > MAX_SCORES:
        problems.append(Problem("scores", "too_many", f"at most {MAX_SCORES} scores per report",
                                "send them in several reports"))
    else:
        seen: dict[tuple[str, str, int], int] = {}
        for i, item in enumerate(scores):
            where, before = f"scores[{i}]", len(problems)
            if not isinstance(item, dict):
                problems.append(Problem(where, "invalid_request", f"{where} must be an object",
                                        "{benchmark, metric, value, stderr?, repeat?}"))
                continue
            bench = _text(problems, item.get("benchmark"), f"{where}.benchmark", limit=255, required=True)
            metric = _text(problems, item.get("metric"), f"{where}.metric", limit=255, required=True)
            value = _number(problems, item.get("value"), f"{where}.value", required=True)
            stderr = _number(problems, item.get("stderr"), f"{where}.stderr", required=False)
            if stderr is not None and stderr < 0:
                problems.append(Problem(f"{where}.stderr", "invalid_request", f"{where}.stderr must not be negative",
                                        "send the standard error as reported, or leave it out"))
            repeat = _repeat(problems, item.get("repeat"), f"{where}.repeat", default_repeat)
            if len(problems) > before or value is None:
                continue
            key = (bench, metric, repeat)
            if key in seen:
                problems.append(Problem(where, "duplicate", f"{where} repeats scores[{seen[key]}] "
                                                            f"({bench}/{metric}, repeat {repeat})",
                                        "send each (benchmark, metric, repeat) once per report"))
                continue
            seen[key] = i
            points.append(Point(run_id, bench, metric, value, repeat, stderr))
    if problems:
        raise Rejected(_TITLE, problems)
    return Report(runner, model, tuple(points))


def record(db: Session, run_id: str, report: Report) -> int:
    """Store a checked report's points for `run_id`, replacing the rows of the same (suite, metric, repeat);
    return how many were written."""
    existing = {(row.benchmark, row.metric, row.repeat): row
                for row in db.scalars(select(BenchmarkScore).where(BenchmarkScore.run_id == run_id))}
    now = time.time()
    for point in report.points:
        row = existing.get((point.benchmark, point.metric, point.repeat))
        if row is None:
            row = BenchmarkScore(run_id=run_id, benchmark=point.benchmark, metric=point.metric, repeat=point.repeat)
            db.add(row)
        row.value, row.stderr, row.runner, row.model, row.created_at = (point.value, point.stderr, report.runner,
                                                                          report.model, now)
    return len(report.points)


def points_of(db: Session, run_ids: list[str]) -> list[Point]:
    """Return the stored points of the runs, by run, suite, metric and repeat."""
    if not run_ids:
        return []
    rows = db.scalars(select(BenchmarkScore).where(BenchmarkScore.run_id.in_(run_ids)).order_by(
        BenchmarkScore.run_id, BenchmarkScore.benchmark, BenchmarkScore.metric, BenchmarkScore.repeat))
    return [Point(r.run_id, r.benchmark, r.metric, r.value, r.repeat, r.stderr) for r in rows]


def scores_of(db: Session, run_id: str) -> list[dict[str, Any]]:
    """Return a run's scores as `[{benchmark, metric, value, stderr, repeat, runner, model}]`, by suite, metric
    and repeat (the shape of `GET /api/jobs/{id}/benchmarks` and the job status's `benchmarks`)."""
    rows = db.scalars(select(BenchmarkScore).where(BenchmarkScore.run_id == run_id).order_by(
        BenchmarkScore.benchmark, BenchmarkScore.metric, BenchmarkScore.repeat))
    return [{"benchmark": r.benchmark, "metric": r.metric, "value": r.value, "stderr": r.stderr, "repeat": r.repeat,
             "runner": r.runner, "model": r.model} for r in rows]


def bench_metrics(db: Session, run_ids: list[str]) -> dict[str, dict[str, float]]:
    """Return, per run, `{bench/<suite>/<metric>: mean over repeats}` of the scores it reported, else those of its
    newest follow-up that reported any (a training run's benchmark evaluation)."""
    if not run_ids:
        return {}
    children = db.execute(select(Job.id, Job.parent_id).where(Job.parent_id.in_(run_ids))
                          .order_by(Job.submitted_at.desc(), Job.id.desc())).all()
    sums: dict[str, dict[str, list[float]]] = {}
    for point in points_of(db, list(run_ids) + [child for child, _ in children]):
        sums.setdefault(point.run_id, {}).setdefault(f"{BENCH_PREFIX}{point.benchmark}/{point.metric}",
                                                     []).append(point.value)
    means = {run: {key: summarise(run, values).mean or 0.0 for key, values in found.items()}
             for run, found in sums.items()}
    out: dict[str, dict[str, float]] = {}
    for run in run_ids:
        own = means.get(run) or next((means[child] for child, parent in children if parent == run and child in means),
                                     {})
        if own:
            out[run] = own
    return out


def scored_runs(db: Session, user_id: int, *, limit: int = 50) -> list[dict[str, Any]]:
    """Return the account's runs that reported benchmark scores, newest first: `{run_id, name, exp, status,
    submitted_at, suites}` (`suites`: their names, sorted)."""
    scored = select(BenchmarkScore.run_id).distinct().subquery()
    jobs = db.execute(select(Job.id, Job.name, Job.exp, Job.status, Job.submitted_at)
                      .where(Job.user_id == user_id, Job.id.in_(select(scored.c.run_id)))
                      .order_by(Job.submitted_at.desc(), Job.id.desc()).limit(limit)).all()
    suites: dict[str, set[str]] = {}
    if jobs:
        for run, bench in db.execute(select(BenchmarkScore.run_id, BenchmarkScore.benchmark).distinct()
                                     .where(BenchmarkScore.run_id.in_([j[0] for j in jobs]))):
            suites.setdefault(run, set()).add(bench)
    return [{"run_id": run, "name": name, "exp": exp, "status": status, "submitted_at": at,
             "suites": sorted(suites.get(run, ()))} for run, name, exp, status, at in jobs]
