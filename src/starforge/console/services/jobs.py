"""Jobs: the one door for status changes (`set_status`), wire views, listing, lookup and control requests."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.models import Job, JobEvent
from .accounts import UserView
from .errors import NotFound

__all__ = [
    "TERMINAL",
    "WAITING",
    "InvalidTransition",
    "cancel_all",
    "find_job",
    "job_view",
    "list_jobs",
    "new_run_id",
    "request_stop",
    "set_status",
]

WAITING = ("queued", "pending")
TERMINAL = ("succeeded", "failed", "stopped")
_TRANSITIONS = {
    "": {"queued", "pending", "submitted"},
    "queued": {"submitted", "pending", "stopped", "failed", "queued"},
    "pending": {"queued", "submitted", "stopped", "failed", "pending"},
    "submitted": {"running", "failed", "stopped", "queued", "succeeded"},
    "running": {"succeeded", "failed", "stopped"},
}
_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


class InvalidTransition(RuntimeError):
    """Raised on a status change the state machine forbids (a bug, never user input)."""


def new_run_id() -> str:
    """Return a fresh opaque run id: `r-` and 10 base-36 characters."""
    return "r-" + "".join(secrets.choice(_ALPHABET) for _ in range(10))


def set_status(db: Session, job: Job, status: str, *, reason: str = "", waiting_for: str = "") -> bool:
    """Move `job` to `status`, recording the event with its time and cause; False when it is already there."""
    current = job.status or ""
    if current == status and reason == job.reason:
        return False
    if status not in _TRANSITIONS.get(current, set()):
        raise InvalidTransition(f"job {job.id}: {current or 'new'} -> {status} is not allowed")
    now = time.time()
    db.add(JobEvent(job_id=job.id, at=now, from_status=current, to_status=status, reason=reason))
    job.status = status
    job.reason = reason
    job.waiting_for = waiting_for if status in WAITING else ""
    if status == "running" and job.started_at is None:
        job.started_at = now
    if status in TERMINAL:
        job.finished_at = now
        if job.started_at is None and status != "stopped":
            job.started_at = now
    return True


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
    }
    pipeline = _pipeline(db, job)
    if pipeline is not None:
        view["pipeline"] = pipeline
    return {k: v for k, v in view.items() if v is not None}


def list_jobs(db: Session, user: UserView, *, limit: int = 15, everyone: bool = False) -> list[dict[str, Any]]:
    """Return the caller's jobs newest first (an admin's `everyone` lists all accounts)."""
    query = select(Job)
    if not (everyone and user.is_admin):
        query = query.where(Job.user_id == user.id)
    rows = db.scalars(query.order_by(Job.submitted_at.desc(), Job.id.desc()).limit(max(1, min(limit, 1000))))
    return [job_view(db, row) for row in rows]


def find_job(db: Session, user: UserView, ref: str) -> Job:
    """Return the job named by its job_ref or run_id if the caller may see it; NotFound otherwise (never 403)."""
    job = db.get(Job, (ref or "").strip())
    if job is None or (job.user_id != user.id and not user.is_admin):
        raise NotFound(f"no job {ref!r} (see `sf job ls`)")
    return job


def request_stop(db: Session, user: UserView, ref: str, *, reason: str = "") -> tuple[Job, bool]:
    """Stop a job: waiting jobs stop at once, placed ones are marked for the executor; False if already ended.

    `reason` (default: who asked) becomes the stopped job's reason.
    """
    job = find_job(db, user, ref)
    return job, stop_job(db, job, reason or f"stopped by {user.username}")


def stop_job(db: Session, job: Job, reason: str) -> bool:
    """Stop one job with `reason` (waiting: at once; placed or running: by the executor); False if it had ended."""
    if job.status in TERMINAL:
        return False
    if job.status in WAITING:
        set_status(db, job, "stopped", reason=f"{reason} before it started")
    else:
        job.stop_requested = True
        job.stop_reason = reason[:2000]
    return True


def cancel_all(db: Session, user: UserView) -> int:
    """Request a stop of every unfinished job of the caller; returns how many."""
    count = 0
    rows = db.scalars(select(Job).where(Job.user_id == user.id, Job.status.not_in(TERMINAL)))
    for job in rows:
        request_stop(db, user, job.id)
        count += 1
    return count
