"""What the API and the web pages read about benchmarks: the suites offered, a run's scores, and the comparison of
runs by the rule of `compare`.

Tier: use case (each function owns one read transaction). A run another account owns is a 404, for everyone but an
administrator (`jobs.queries.find_job`).
"""

from __future__ import annotations

from typing import Any

from ....contract import Problem
from ..accounts.credentials import UserView
from ..context import Runtime
from ..errors import Rejected
from ..jobs import queries as job_queries
from ..registries import benchmark_packs
from . import compare as rule
from . import scores

__all__ = ["MAX_COMPARED", "compare_runs", "comparison", "job_scores", "offered_suites", "parse_runs", "run_summary",
           "scored_runs"]

MAX_COMPARED = 20


def offered_suites(rt: Runtime, *, user: UserView) -> dict[str, Any]:
    """Return `{suites: [{name, pack, pack_version, digest, metrics, description, builtin, task}]}`, by name."""
    with rt.db.read() as db:
        found = benchmark_packs.available_suites(db)
    return {"suites": [s.to_dict() for s in sorted(found, key=lambda s: s.name)]}


def job_scores(rt: Runtime, *, user: UserView, ref: str) -> dict[str, Any]:
    """Return `{job_ref, benchmarks: [{benchmark, metric, value, stderr, repeat, runner, model}]}` of a run the
    caller may see."""
    with rt.db.read() as db:
        job = job_queries.find_job(db, user, ref)
        return {"job_ref": job.id, "benchmarks": scores.scores_of(db, job.id)}


def parse_runs(runs: str) -> list[str]:
    """Return the distinct run ids of a comma-separated list, in order; raise Rejected (422) at `runs` when it
    names none or more than MAX_COMPARED."""
    names = list(dict.fromkeys(r.strip() for r in runs.split(",") if r.strip()))
    if not names or len(names) > MAX_COMPARED:
        raise Rejected("Invalid request", [Problem("runs", "invalid_request",
                                                   f"runs must name 1 to {MAX_COMPARED} runs, comma-separated",
                                                   "e.g. runs=<baseline run id>,<other run id>")], status=422)
    return names


def comparison(run_ids: list[str], points: list[rule.Point]) -> dict[str, Any]:
    """Return the wire shape of a comparison: `{runs, baseline, rows: [{benchmark, metric, higher_is_better,
    runs: [{run_id, n, mean, spread, values, delta, verdict, note}]}]}`."""
    rows = rule.compare(run_ids, points)
    return {"runs": run_ids, "baseline": run_ids[0], "band_spreads": rule.BAND_SPREADS,
            "rows": [row.to_dict() for row in rows]}


def compare_runs(rt: Runtime, *, user: UserView, runs: str) -> dict[str, Any]:
    """Compare the caller's runs named in `runs` (the first is the baseline) on every suite and metric they
    reported; a run the caller may not see is a 404."""
    names = parse_runs(runs)
    with rt.db.read() as db:
        ids = [job_queries.find_job(db, user, name).id for name in names]
        points = scores.points_of(db, ids)
    return comparison(ids, points)


def run_summary(rt: Runtime, *, user: UserView, ref: str) -> dict[str, Any]:
    """Return one run's scores summarised as a comparison of that run alone (mean, spread and n per suite and
    metric), for the job's page."""
    with rt.db.read() as db:
        job = job_queries.find_job(db, user, ref)
        return comparison([job.id], scores.points_of(db, [job.id]))


def scored_runs(rt: Runtime, *, user: UserView, limit: int = 50) -> dict[str, Any]:
    """Return `{runs: [{run_id, name, exp, status, submitted_at, suites}]}`: the caller's runs that reported
    benchmark scores, newest first (what the compare page offers to compare)."""
    with rt.db.read() as db:
        return {"runs": scores.scored_runs(db, user.id, limit=limit)}
