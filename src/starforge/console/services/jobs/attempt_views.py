"""What a job's wire view says of its attempts: how many, what the current one resumed from, the restarts it has
left, whether it is being asked to checkpoint and stop, and each attempt's start, end and outcome.

Tier: query (runs over the caller's session). A checkpoint is shown at the path its job saw
(`registries.artifacts.shown_path`), never the console machine's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from ...store.models import Job
from ..registries.artifacts import shown_path
from .attempts import history

__all__ = ["MAX_HISTORY", "attempt_fields"]

MAX_HISTORY = 100  # attempts a view lists (the latest ones; `attempts` still counts them all)


def _shown(path: str, run_dir: str, job_out: str) -> str | None:
    return shown_path(path, run_dir=run_dir, job_out=job_out) if path else None


def attempt_fields(db: Session, job: Job, job_out: Callable[[str], str]) -> dict[str, Any]:
    """Return the attempt fields of a job's detail view: `attempts`, `max_restarts`, `restarts`, `resumed_from`
    (the checkpoint the current attempt started from, or None), `resume_step`, `interrupt` (the checkpoint-and-stop
    asked of it: `{kind, by, at}`, or None) and `attempt_history` (oldest first: number, started_at, ended_at,
    outcome — "" while the attempt runs —, reason, resumed_from, resume_step).

    `job_out(executor_ref)` returns the job's output folder as the engine of that ref showed it to the job."""
    current_out = job_out(job.executor_ref) if job.run_dir else ""
    rows = history(db, job.id)[-MAX_HISTORY:]
    listed = []
    for row in rows:
        out = job_out(row.executor_ref) if job.run_dir and row.executor_ref else current_out
        listed.append({"number": row.number, "started_at": row.started_at, "ended_at": row.ended_at,
                       "outcome": row.outcome,
                       "reason": row.reason, "resumed_from": _shown(row.resumed_from, job.run_dir, out),
                       "resume_step": row.resume_step})
    interrupt = ({"kind": job.interrupt, "by": job.interrupt_by or None, "at": job.interrupt_at}
                 if job.interrupt else None)
    return {"attempts": job.attempts or 0, "max_restarts": job.max_restarts or 0, "restarts": job.restarts or 0,
            "resumed_from": _shown(job.resumed_from, job.run_dir, current_out), "resume_step": job.resume_step,
            "interrupt": interrupt, "attempt_history": listed}
