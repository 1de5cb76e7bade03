"""Job control for the API: stop one job or every unfinished job of the caller; pause, resume and retry one.

Tier: use case (each function owns one write transaction, then wakes the scheduler). What the caller cannot see
is a 404 before any 403, so a viewer learns nothing about other accounts' jobs.
"""

from __future__ import annotations

import time
from typing import Any

from ..accounts import roles
from ..accounts.credentials import UserView
from ..context import Runtime
from ..errors import Conflict, Forbidden
from .queries import find_job, unfinished_jobs
from .rows import HELD, WAITING, clear_interrupt, interrupt_job, set_status, start_again, stop_job

__all__ = ["cancel_all", "pause", "resume", "retry", "stop"]


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


def pause(rt: Runtime, *, user: UserView, ref: str) -> dict[str, Any]:
    """Pause a job: a waiting one is held at once; a running one is asked to checkpoint, then stop, and is held
    (`paused`) when it has; it keeps its place in the queue until `resume`."""
    if not roles.can_stop(user):
        raise Forbidden("viewers cannot pause jobs")
    now = time.time()
    with rt.db.write() as db:
        job = find_job(db, user, ref)
        changed = True
        if job.status in WAITING or (job.status in ("submitted", "preparing") and not job.executor_ref):
            job.lease_owner, job.lease_token, job.lease_expires_at = "", "", None
            set_status(db, job, "paused", reason=f"paused by {user.username}; `sf job resume {job.id}` puts it back "
                                                 "in the queue", at=now)
        elif job.status in ("submitted", "running") and not job.stop_requested and job.interrupt != "pause":
            grace = rt.settings.preemption.grace_seconds
            interrupt_job(db, job, "pause", by=user.username, at=now,
                          reason=f"pausing at {user.username}'s request: saving a checkpoint, then stopping within "
                                 f"{grace:g} s")
        else:
            changed = False
        status = job.status
    rt.wake()
    return {"paused": changed, "status": status, "job_ref": job.id}


def resume(rt: Runtime, *, user: UserView, ref: str) -> dict[str, Any]:
    """Resume a paused job: back to the queue in its place (a running job still asked to pause keeps running)."""
    if not roles.can_stop(user):
        raise Forbidden("viewers cannot resume jobs")
    with rt.db.write() as db:
        job = find_job(db, user, ref)
        changed = True
        if job.status in HELD:
            set_status(db, job, "queued", reason=f"resumed by {user.username}", waiting_for="capacity")
        elif job.interrupt == "pause" and job.status in ("submitted", "running"):
            clear_interrupt(job)
            set_status(db, job, job.status, reason=f"the pause was cancelled by {user.username}")
        else:
            changed = False
        status = job.status
    rt.wake()
    return {"resumed": changed, "status": status, "job_ref": job.id}


def retry(rt: Runtime, *, user: UserView, ref: str) -> dict[str, Any]:
    """Run a failed or stopped job again, as the same job, from its latest checkpoint (its restarts renewed)."""
    if not roles.can_stop(user):
        raise Forbidden("viewers cannot retry jobs")
    with rt.db.write() as db:
        job = find_job(db, user, ref)
        if job.status not in ("failed", "stopped"):
            raise Conflict(f"job {job.id} is {job.status}; only a failed or stopped job can be retried"
                           + (" (`sf job resume` for a paused one)" if job.status in HELD else ""))
        job.restarts = 0
        start_again(db, job, "queued", reason=f"retried by {user.username}; it resumes from its latest checkpoint",
                    waiting_for="capacity")
        status = job.status
    rt.wake()
    return {"retried": True, "status": status, "job_ref": job.id}
