"""Job queries: find a job the caller may see, list jobs, and the wire row of `/api/jobs/mine`.

Tier: query (runs over the caller's session; never begins or commits a transaction). What another account owns
does not exist for the caller: `find_job` answers NotFound, never Forbidden.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, or_, select
from sqlalchemy.orm import Session

from ....wire import ref_parts
from ...scheduling_config import FairShareSettings
from ...store.models import Job, JobEvent
from ..accounts import roles
from ..accounts.view import UserView
from ..errors import NotFound
from ..quota import shares
from ..quota.fairshare import fair_order
from .rows import QUEUE_ORDER, TERMINAL, WAITING

__all__ = ["MAX_LIST_LIMIT", "JobFilter", "JobRow", "events_of", "find_job", "job_view", "queue_place",
           "unfinished_jobs", "visible_job_rows", "visible_jobs"]

MAX_LIST_LIMIT = 1000  # rows of one listing; clients send 1, 15 and 200


def _pipeline(db: Session, job: Job) -> dict[str, Any] | None:
    spec = json.loads(job.spec_json or "{}")
    actions = spec.get("spec", {}).get("lifecycle", {}).get("on_success", [])
    if not actions or job.action:
        return None
    children = {c.action: c for c in db.scalars(select(Job).where(Job.parent_id == job.id))}
    steps = []
    for action in actions:
        child = children.get(action)
        status = child.status if child else ("skipped" if job.status in ("failed", "stopped") else "waiting")
        steps.append({"action": action, "job_ref": child.id if child else None, "status": status.upper()})
    statuses = [s["status"] for s in steps]
    if all(s == "SUCCEEDED" for s in statuses):
        state = "done"
    elif any(s in ("FAILED", "STOPPED", "SKIPPED") for s in statuses):
        state = "partial"
    else:
        state = "running"
    return {"state": state, "steps": steps}


def job_view(db: Session, job: Job) -> dict[str, Any]:
    """Return the wire row of `/api/jobs/mine` (job_ref = run_id, so every id endpoint accepts both)."""
    view: dict[str, Any] = {
        "job_ref": job.id,
        "run_id": job.id,
        "name": job.name,
        "exp": job.exp,
        "status": job.status,
        "message": job.reason,
        "requested_gpus": job.requested_gpus,
        "gpus": job.requested_gpus,
        "profile": job.profile,
        "recipe": job.recipe,
        "project": job.project,
        "owner": job.username,
        "submitted_at": job.submitted_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
        "exit_code": job.exit_code,
        "parent": job.parent_id or None,
        "action": job.action or None,
        "sweep_id": job.sweep_id or None,
        "attempts": job.attempts or 0,  # starts so far (a preempted, paused or restarted job starts again)
    }
    if job.executor_ref:  # the engine that took the job, and its own id for it (Slurm job id, Ray submission id)
        view["executor"], view["engine_ref"] = ref_parts(job.executor_ref)
    pipeline = _pipeline(db, job)
    if pipeline is not None:
        view["pipeline"] = pipeline
    return {k: v for k, v in view.items() if v is not None}


@dataclass(frozen=True)
class JobFilter:
    """Which jobs a listing keeps: any of `statuses` (none: all), of experiment `exp` (its path or its last part),
    submitted at or after `since` (epoch seconds), and of sweep `sweep`."""

    statuses: tuple[str, ...] = ()
    exp: str = ""
    since: float | None = None
    sweep: str = ""


class JobRow(NamedTuple):
    """A job as a listing page shows it: only the columns it reads (no JobSpec, no metadata). `sweep_id`,
    `parent_id` and `action` are "" when the job is no sweep run or follow-up; `metric`/`metric_value` are the
    recipe's primary metric and its last value, filled in by `primary_metrics` ("" and None until then)."""

    job_ref: str
    name: str
    exp: str
    status: str
    message: str
    recipe: str
    profile: str
    requested_gpus: int
    submitted_at: float
    started_at: float | None
    finished_at: float | None
    sweep_id: str
    parent_id: str
    action: str
    attempts: int
    restarts: int
    metric: str = ""
    metric_value: float | None = None


_ROW_COLUMNS = (Job.id, Job.name, Job.exp, Job.status, Job.reason, Job.recipe, Job.profile, Job.requested_gpus,
                Job.submitted_at, Job.started_at, Job.finished_at, Job.sweep_id, Job.parent_id, Job.action,
                Job.attempts, Job.restarts)
_NEWEST_FIRST = (Job.submitted_at.desc(), Job.id.desc())


def visible_jobs(db: Session, user: UserView, *, limit: int = 15, everyone: bool = False,
                 where: JobFilter = JobFilter()) -> list[Job]:
    """Return the caller's job rows newest first (`everyone` lists all accounts for a caller who sees all jobs),
    narrowed by `where`."""
    query = select(Job).where(*_conditions(user, everyone, where))
    return list(db.scalars(query.order_by(*_NEWEST_FIRST).limit(_rows(limit))))


def visible_job_rows(db: Session, user: UserView, *, limit: int = 15, everyone: bool = False,
                     where: JobFilter = JobFilter()) -> list[JobRow]:
    """Return the same jobs as `visible_jobs`, in the same order, as lean `JobRow`s (only the listed columns)."""
    query = select(*_ROW_COLUMNS).where(*_conditions(user, everyone, where))
    return [JobRow._make((*row, "", None)) for row in db.execute(query.order_by(*_NEWEST_FIRST).limit(_rows(limit)))]


def _rows(limit: int) -> int:
    return max(1, min(limit, MAX_LIST_LIMIT))


def _conditions(user: UserView, everyone: bool, where: JobFilter) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if not (everyone and roles.sees_all_jobs(user)):
        conditions.append(Job.user_id == user.id)
    if where.statuses:
        conditions.append(Job.status.in_(where.statuses))
    if where.exp:
        conditions.append(or_(Job.exp == where.exp, Job.exp.like("%/" + _like_literal(where.exp), escape="\\")))
    if where.since is not None:
        conditions.append(Job.submitted_at >= where.since)
    if where.sweep:
        conditions.append(Job.sweep_id == where.sweep)
    return conditions


def _like_literal(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class _Queued(NamedTuple):
    """A waiting job as the fair order reads it."""

    id: str
    user_id: int
    series_gpus: dict[str, int]


def queue_place(db: Session, job: Job, *, fair_share: FairShareSettings | None = None,
                capacity: Mapping[str, int] | None = None) -> tuple[int, int] | None:
    """Return a waiting job's place among the jobs waiting for its profile, in the order the scheduler serves them
    (with `fair_share` on: the fair order of `fairshare.fair_order` on the share book of now; else `QUEUE_ORDER`),
    and how many wait, counting every account's jobs; None for a job not waiting."""
    if job.status not in WAITING:
        return None
    rows = db.execute(select(Job.id, Job.user_id, Job.series_gpus)
                      .where(Job.status.in_(WAITING), Job.profile == job.profile).order_by(*QUEUE_ORDER))
    queue = [_Queued(job_id, user_id, json.loads(series or "{}")) for job_id, user_id, series in rows]
    if fair_share is not None and fair_share.enabled:
        book = shares.book(db, fair_share=fair_share, capacity=capacity or {}, now=time.time())
        queue = list(fair_order(queue, book))
    ids = [queued.id for queued in queue]
    return ids.index(job.id) + 1, len(ids)


def find_job(db: Session, user: UserView, ref: str) -> Job:
    """Return the job named by its job_ref or run_id if the caller may see it; NotFound otherwise (never 403)."""
    job = db.get(Job, (ref or "").strip())
    if job is None or not roles.can_see_job(user, job.user_id):
        raise NotFound(f"no job {ref!r} (see `sf job ls`)")
    return job


def unfinished_jobs(db: Session, user_id: int) -> Sequence[Job]:
    """Return every job of the account that has not reached a final status."""
    return list(db.scalars(select(Job).where(Job.user_id == user_id, Job.status.not_in(TERMINAL))))


def events_of(db: Session, job: Job) -> list[dict[str, Any]]:
    """Return the job's status history, oldest first, in its wire form."""
    events = db.scalars(select(JobEvent).where(JobEvent.job_id == job.id).order_by(JobEvent.id))
    return [{"at": e.at, "from": e.from_status, "to": e.to_status, "reason": e.reason} for e in events]
