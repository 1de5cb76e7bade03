"""What the API reads about jobs: listings, one job with its history, its admitted JobSpec, artifacts, metrics,
admission decisions, and the state the log stream follows.

Tier: use case (each function owns one read transaction). A job another account owns is a 404, for everyone but an
administrator.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from ....contract import Problem
from ..accounts.credentials import UserView
from ..audit import decisions_for_job, decisions_of
from ..benchmarks import compare as bench_rule
from ..benchmarks.scores import points_of, scores_of
from ..context import Runtime
from ..errors import Rejected
from ..registries import artifacts as artifact_registry
from ..sweeps.rows import find_sweep
from . import metrics as metric_store
from . import queries as job_queries
from .attempt_views import attempt_fields
from .primary_metrics import last_values, primary_keys
from .rows import STATUSES, TERMINAL

__all__ = ["admissions", "artifacts", "job_admissions", "jobspec", "list_job_rows", "list_jobs", "log_state", "metrics",
           "show"]


def list_jobs(rt: Runtime, *, user: UserView, limit: int, everyone: bool = False, status: str = "", exp: str = "",
              since: float | None = None, sweep: str = "") -> dict[str, Any]:
    """Return `{jobs: [...]}`: the caller's job rows newest first (every account's for an administrator asking
    for `everyone`), of the comma-separated `status`es, experiment `exp`, submitted since `since` and of sweep
    `sweep` when given; an unknown status is a 422 naming it, a sweep that is not the caller's a 404."""
    where = _job_filter(status, exp, since, sweep)
    with rt.db.read() as db:
        _check_sweep(db, user, where)
        rows = job_queries.visible_jobs(db, user, limit=limit, everyone=everyone, where=where)
        return {"jobs": [job_queries.job_view(db, row) for row in rows]}


def list_job_rows(rt: Runtime, *, user: UserView, limit: int, everyone: bool = False, status: str = "",
                  exp: str = "", since: float | None = None, sweep: str = "") -> list[job_queries.JobRow]:
    """Return the jobs `list_jobs` lists, by the same rules and in the same order, as lean rows (what a page of
    many jobs shows: no JobSpec read, no follow-up pipeline), each with its recipe's primary metric and that
    metric's last value (one more query for the whole page)."""
    where = _job_filter(status, exp, since, sweep)
    with rt.db.read() as db:
        _check_sweep(db, user, where)
        rows = job_queries.visible_job_rows(db, user, limit=limit, everyone=everyone, where=where)
        keys = primary_keys(rt.catalog, [row.recipe for row in rows])
        last = last_values(db, [row.job_ref for row in rows if row.recipe in keys], keys)
    return [row._replace(metric=keys[row.recipe][0], metric_value=last.get(row.job_ref)) if row.recipe in keys
            else row for row in rows]


def _job_filter(status: str, exp: str, since: float | None, sweep: str) -> job_queries.JobFilter:
    statuses = tuple(dict.fromkeys(s.strip().lower() for s in status.split(",") if s.strip()))
    unknown = [s for s in statuses if s not in STATUSES]
    if unknown:
        known = ", ".join(STATUSES)
        raise Rejected("Invalid request", [Problem("status", "unknown_status", f"no job status {unknown[0]!r} ({known})",
                                                   f"use one or more of {known}, comma-separated")], status=422)
    return job_queries.JobFilter(statuses, exp.strip().strip("/"), since, sweep.strip())


def _check_sweep(db: Session, user: UserView, where: job_queries.JobFilter) -> None:
    if where.sweep:
        find_sweep(db, user, where.sweep)  # a sweep that is not the caller's is a 404, not an empty list


def show(rt: Runtime, *, user: UserView, ref: str) -> dict[str, Any]:
    """Return one job row with its status history, warnings, its attempts (`attempt_views.attempt_fields`), the
    image it runs in with the digest that image resolved to, the benchmark scores it reported, and, while it waits,
    its place in the queue."""
    with rt.db.read() as db:
        job = job_queries.find_job(db, user, ref)
        view = job_queries.job_view(db, job)
        run_dir = Path(job.run_dir or ".")  # `attempt_fields` asks only for a job that has a run folder
        view.update(attempt_fields(db, job, lambda engine_ref: rt.job_paths(run_dir, engine_ref).out))
        view["events"] = job_queries.events_of(db, job)
        view["warnings"] = json.loads(job.warnings_json or "[]")
        view["validations"] = []
        framework = json.loads(job.spec_json or "{}").get("spec", {}).get("framework", {})
        view["image"] = framework.get("image") or None if isinstance(framework, dict) else None
        view["image_digest"] = job.image_digest or None
        view["benchmarks"] = scores_of(db, job.id)
        # the same scores summarised by the comparison's one rule (mean, spread and n per suite and metric)
        view["benchmark_summary"] = [row.to_dict() for row in bench_rule.compare([job.id], points_of(db, [job.id]))]
        place = job_queries.queue_place(db, job, fair_share=rt.settings.fair_share, capacity=rt.capacity)
        if place is not None:  # a waiting job: where it stands in the queue the scheduler serves
            view["queue_position"], view["queue_length"] = place
        return view


def jobspec(rt: Runtime, *, user: UserView, ref: str) -> Any:
    """Return the admitted, owner-stamped JobSpec of a job the caller may see, from its one store (`spec_json`)."""
    with rt.db.read() as db:
        return json.loads(job_queries.find_job(db, user, ref).spec_json)


def artifacts(rt: Runtime, *, user: UserView, ref: str) -> dict[str, Any]:
    """Return `{artifacts: [...]}`: what a run registered, in registration order, each at the path its job saw."""
    with rt.db.read() as db:
        job = job_queries.find_job(db, user, ref)
        registered = artifact_registry.list_artifacts(db, job.id)
        run_dir, executor_ref = job.run_dir, job.executor_ref
    job_out = rt.job_paths(Path(run_dir), executor_ref).out if run_dir else ""
    return {"artifacts": [a.to_dict(shown=artifact_registry.shown_path(a.path, run_dir=run_dir, job_out=job_out))
                          for a in registered]}


def metrics(rt: Runtime, *, user: UserView, ref: str) -> dict[str, Any]:
    """Return a run's metric series and latest values."""
    with rt.db.read() as db:
        job = job_queries.find_job(db, user, ref)
        return {"job_ref": job.id, **metric_store.series_of(db, job.id)}


def admissions(rt: Runtime, *, user: UserView, limit: int) -> dict[str, Any]:
    """Return `{admissions: [...]}`: the caller's admission decisions, newest first."""
    with rt.db.read() as db:
        return {"admissions": decisions_of(db, user.id, limit=limit)}


def job_admissions(rt: Runtime, *, user: UserView, ref: str) -> dict[str, Any]:
    """Return `{admissions: [...]}`: the admission decisions recorded for a job the caller may see (the rows
    `admissions` lists, of its owner), newest first."""
    with rt.db.read() as db:
        job = job_queries.find_job(db, user, ref)
        return {"admissions": decisions_for_job(db, job.user_id, job.id)}


def log_state(rt: Runtime, *, user: UserView, ref: str) -> tuple[str, bool, str]:
    """Return a job's status, whether it is final, and its run directory ("" before it was launched)."""
    with rt.db.read() as db:
        job = job_queries.find_job(db, user, ref)
        return job.status, job.status in TERMINAL, job.run_dir
