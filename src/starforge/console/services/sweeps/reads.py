"""Sweep reads: the caller's sweeps, and one sweep's runs — each run's values, status and final metrics (the last
value reported per metric, and its benchmark scores as `bench/<suite>/<metric>`, the mean over repeats of its own or
its evaluation follow-up's) — ranked by a metric in the direction its recipe declares (a benchmark score: the
comparison rule's, `benchmarks.compare.higher_is_better`), the best run marked.

Tier: use case (owns its read transactions). The metric defaults to the recipe's first primary metric; its direction
is `metrics.semantics.<metric>.direction` (`higher` or `lower`); a metric the recipe calls `neutral` (or does not
describe) ranks runs by value, highest first, and names no best run.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import func, select

from ....contract import Problem
from ...store.models import Job, Sweep
from ..accounts.credentials import UserView
from ..benchmarks.compare import higher_is_better
from ..benchmarks.scores import BENCH_PREFIX, bench_metrics
from ..context import Runtime
from ..errors import Rejected
from ..jobs.metrics import series_of
from .rows import find_sweep

__all__ = ["MAX_SWEEPS_LIMIT", "list_sweeps", "show"]

MAX_SWEEPS_LIMIT = 1000
_RANKED = ("higher", "lower")


def list_sweeps(rt: Runtime, *, user: UserView, limit: int = 50) -> dict[str, Any]:
    """Return `{sweeps: [{sweep_id, exp, profile, max_parallel, created_at, jobs, statuses}]}`: the caller's sweeps,
    newest first, with how many runs each has in each status."""
    with rt.db.read() as db:
        rows = list(db.scalars(select(Sweep).where(Sweep.user_id == user.id)
                               .order_by(Sweep.created_at.desc(), Sweep.id.desc())
                               .limit(max(1, min(limit, MAX_SWEEPS_LIMIT)))))
        counts: dict[str, Counter[str]] = {row.id: Counter() for row in rows}
        if rows:
            for sweep_id, status, count in db.execute(
                    select(Job.sweep_id, Job.status, func.count()).where(Job.user_id == user.id,
                                                                         Job.sweep_id.in_(list(counts)))
                    .group_by(Job.sweep_id, Job.status)):
                counts[sweep_id][status] = count
        return {"sweeps": [{"sweep_id": row.id, "exp": row.exp, "profile": row.profile,
                            "max_parallel": row.max_parallel, "created_at": row.created_at,
                            "jobs": sum(counts[row.id].values()), "statuses": dict(counts[row.id])}
                           for row in rows]}


def _params(job: Job) -> dict[str, Any]:
    """Return the run's swept values: the typed hyperparameter for each `sweep_params` key, else the value sent."""
    sent = json.loads(job.meta_json or "{}").get("sweep_params")
    typed = json.loads(job.spec_json or "{}").get("spec", {}).get("hyperparams", {})
    if not isinstance(sent, dict):
        return {}
    return {key: typed.get(key, value) if isinstance(typed, dict) else value for key, value in sent.items()}


def _semantics(recipe: Any) -> tuple[list[str], dict[str, Any], dict[str, list[str]]]:
    section = recipe.metrics if recipe is not None else {}
    primary = [m for m in section.get("primary") or [] if isinstance(m, str)]
    semantics = section.get("semantics")
    aliases = section.get("aliases")
    named = {k: [a for a in v if isinstance(a, str)] for k, v in aliases.items()
             if isinstance(v, list)} if isinstance(aliases, dict) else {}
    return primary, semantics if isinstance(semantics, dict) else {}, named


def _canonical(name: str, aliases: Mapping[str, Sequence[str]]) -> str:
    for canonical, names in aliases.items():
        if name in names:
            return canonical
    return name


def _value(latest: Mapping[str, Any], metric: str, aliases: Mapping[str, Sequence[str]]) -> float | None:
    for key in (metric, *aliases.get(metric, ())):
        if isinstance(latest.get(key), int | float):
            return float(latest[key])
    return None


def show(rt: Runtime, *, user: UserView, sweep_id: str, metric: str = "") -> dict[str, Any]:
    """Return one sweep with its runs ranked by `metric` (the recipe's first primary metric by default); 404 for a
    sweep that is not the caller's, 422 for a metric neither the recipe declares nor any run reported."""
    with rt.db.read() as db:
        sweep = find_sweep(db, user, sweep_id)
        jobs = list(db.scalars(select(Job).where(Job.user_id == sweep.user_id, Job.sweep_id == sweep.id)
                               .order_by(Job.submitted_at, Job.id)))
        scores = bench_metrics(db, [job.id for job in jobs])
        runs: list[dict[str, Any]] = [{"job_id": job.id, "status": job.status, "message": job.reason, "params": _params(job),
                 "metrics": {**series_of(db, job.id)["latest"], **scores.get(job.id, {})}, "recipe": job.recipe}
                for job in jobs]
    recipe = rt.catalog.get(runs[0]["recipe"]) if runs else None
    primary, semantics, aliases = _semantics(recipe)
    reported = sorted({key for run in runs for key in run["metrics"]})
    wanted = _canonical(metric.strip(), aliases) if metric.strip() else ""
    chosen = wanted or next((m for m in primary), reported[0] if reported else "")
    if wanted and wanted not in primary and wanted not in semantics and wanted not in reported:
        known = sorted({*primary, *reported})
        raise Rejected("Invalid request", [Problem("metric", "invalid_request", f"no metric {metric!r} in this sweep",
                                                   f"choose one of {', '.join(known) or 'none reported yet'}",
                                                   {"allowed": known})], status=422)
    described = semantics.get(chosen)
    direction = str(described.get("direction") or "neutral") if isinstance(described, dict) else "neutral"
    if chosen.startswith(BENCH_PREFIX):  # a benchmark score: its direction is the comparison rule's
        direction = "higher" if higher_is_better(chosen.rsplit("/", 1)[-1]) else "lower"
    for run in runs:
        run["value"] = _value(run["metrics"], chosen, aliases) if chosen else None
        del run["recipe"]
    scored = [r for r in runs if r["value"] is not None]
    scored.sort(key=lambda r: r["value"], reverse=direction != "lower")
    ranked = scored + [r for r in runs if r["value"] is None]
    best = scored[0]["job_id"] if scored and direction in _RANKED else None
    for rank, run in enumerate(ranked, 1):
        run["rank"] = rank if run["value"] is not None else None
        run["best"] = run["job_id"] == best
    keys = list(dict.fromkeys([*json.loads(sweep.keys_json or "[]"), *(k for r in runs for k in r["params"])]))
    return {"sweep_id": sweep.id, "exp": sweep.exp, "profile": sweep.profile, "max_parallel": sweep.max_parallel,
            "created_at": sweep.created_at, "keys": keys, "metric": chosen, "direction": direction, "best": best,
            "statuses": dict(Counter(run["status"] for run in runs)), "runs": ranked}
