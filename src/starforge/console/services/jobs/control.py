"""Job control for the API: stop one job, or every unfinished job of the caller.

Tier: use case (each function owns one write transaction, then wakes the scheduler). What the caller cannot see
is a 404 before any 403, so a viewer learns nothing about other accounts' jobs.
"""

from __future__ import annotations

from typing import Any

from ..accounts import roles
from ..accounts.credentials import UserView
from ..context import Runtime
from ..errors import Forbidden
from .queries import find_job, unfinished_jobs
from .rows import stop_job

__all__ = ["cancel_all", "stop"]


def stop(rt: Runtime, *, user: UserView, ref: str) -> dict[str, Any]:
    """Stop a job (waiting: at once; placed or running: by the executor); a finished one answers `stopped: false`
    with its status."""
    with rt.db.write() as db:
        job = find_job(db, user, ref)
        if not roles.can_stop(user):
            raise Forbidden("viewers cannot stop jobs")
        changed = stop_job(db, job, f"stopped by {user.username}")
        status = job.status
    rt.wake()
    return {"stopped": changed, "status": status, "job_ref": job.id}


def cancel_all(rt: Runtime, *, user: UserView) -> dict[str, Any]:
    """Stop every unfinished job of the caller; answer how many."""
    if not roles.can_stop(user):
        raise Forbidden("viewers cannot stop jobs")
    with rt.db.write() as db:
        jobs = unfinished_jobs(db, user.id)
        for job in jobs:
            stop_job(db, job, f"stopped by {user.username}")
    rt.wake()
    return {"stopped": len(jobs)}
