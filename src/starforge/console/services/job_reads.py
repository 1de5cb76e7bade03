"""Job reads and control for the API: list, show with events, stop, cancel-all, JobSpec, artifacts, admissions."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from ..runtime import Runtime
from ..store.models import Admission, JobEvent
from . import jobs
from . import metrics as metric_store
from .accounts import UserView
from .errors import Forbidden
from .registries import artifacts as artifact_registry

__all__ = ["admissions", "artifacts", "cancel_all", "jobspec", "list_jobs", "log_state", "metrics", "show", "stop"]


def list_jobs(rt: Runtime, user: UserView, *, limit: int, everyone: bool) -> list[dict[str, Any]]:
    """Return the caller's job rows, newest first."""
    with rt.db.read() as db:
        return jobs.list_jobs(db, user, limit=limit, everyone=everyone)


def show(rt: Runtime, user: UserView, ref: str) -> dict[str, Any]:
    """Return one job row with its status history."""
    with rt.db.read() as db:
        job = jobs.find_job(db, user, ref)
        view = jobs.job_view(db, job)
        events = db.scalars(select(JobEvent).where(JobEvent.job_id == job.id).order_by(JobEvent.id))
        view["events"] = [{"at": e.at, "from": e.from_status, "to": e.to_status, "reason": e.reason} for e in events]
        view["warnings"] = json.loads(job.warnings_json or "[]")
        view["validations"] = []
        return view


def stop(rt: Runtime, user: UserView, ref: str) -> dict[str, Any]:
    """Stop a job; a finished one answers `stopped: false`. Another user's job is a 404, for viewers too."""
    with rt.db.write() as db:
        jobs.find_job(db, user, ref)  # what the caller cannot see does not exist: 404 before any 403
        if user.role == "viewer":
            raise Forbidden("viewers cannot stop jobs")
        job, changed = jobs.request_stop(db, user, ref)
        status = job.status
    rt.wake()
    return {"stopped": changed, "status": status, "job_ref": job.id}


def cancel_all(rt: Runtime, user: UserView) -> dict[str, Any]:
    """Stop every unfinished job of the caller."""
    if user.role == "viewer":
        raise Forbidden("viewers cannot stop jobs")
    with rt.db.write() as db:
        count = jobs.cancel_all(db, user)
    rt.wake()
    return {"stopped": count}


def jobspec(rt: Runtime, user: UserView, ref: str) -> Any:
    """Return the admitted JobSpec of a job the caller may see."""
    with rt.db.read() as db:
        job = jobs.find_job(db, user, ref)
        text = rt.read_jobspec(job.id)
        return json.loads(text) if text else json.loads(job.spec_json)


def artifacts(rt: Runtime, user: UserView, ref: str) -> list[dict[str, Any]]:
    """Return a run's artifacts."""
    with rt.db.read() as db:
        job = jobs.find_job(db, user, ref)
        return [a.to_dict() for a in artifact_registry.list_artifacts(db, job.id)]


def admissions(rt: Runtime, user: UserView, *, limit: int) -> list[dict[str, Any]]:
    """Return the caller's admission decisions, newest first."""
    with rt.db.read() as db:
        rows = db.scalars(
            select(Admission).where(Admission.user_id == user.id).order_by(Admission.at.desc()).limit(min(limit, 500))
        )
        return [
            {"at": r.at, "source": r.source, "verdict": r.verdict, "job_id": r.job_id or None, "exp": r.exp,
             "recipe": r.recipe, "problems": json.loads(r.problems_json), "warnings": json.loads(r.warnings_json)}
            for r in rows
        ]



def log_state(rt: Runtime, user: UserView, ref: str) -> tuple[str, bool, str]:
    """Return a job's status, whether it is final, and its run directory ("" before it was launched)."""
    with rt.db.read() as db:
        job = jobs.find_job(db, user, ref)
        return job.status, job.status in jobs.TERMINAL, job.run_dir


def metrics(rt: Runtime, user: UserView, ref: str) -> dict[str, Any]:
    """Return a run's metric series and latest values."""
    with rt.db.read() as db:
        job = jobs.find_job(db, user, ref)
        return {"job_ref": job.id, **metric_store.series_of(db, job.id)}
