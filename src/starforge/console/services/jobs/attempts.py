"""The attempts of a job: where the next one resumes from, the start and end of each, and what an ended attempt
means for the job (final, or back to the queue as the same job).

A job is started again, as the same job (same id, same run folder, artifacts kept), when it was preempted, when a
crash is within the restarts its submitter asked for (`sf submit --max-restarts N`), or when its node, process or
console was lost (up to `restarts.after_loss`). Its next attempt resumes from the latest checkpoint registered for
the run whose folder still exists; metrics it reported beyond that checkpoint's step are dropped, so a series never
holds a step twice.

Tier: query (runs over the caller's session; `next_step` is pure).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from ....wire import KIND_CHECKPOINT, KIND_MODEL
from ...store.models import Artifact, Job, JobAttempt, MetricPoint
from ..registries.artifacts import inside_out_folder
from .rows import clear_interrupt

__all__ = ["Ending", "ResumePoint", "begin_attempt", "completed", "drop_replayed", "end_attempt", "history",
           "next_step", "resume_point"]


@dataclass(frozen=True)
class ResumePoint:
    """The checkpoint a job's next attempt starts from: the console's path and its step."""

    path: Path
    step: int | None


@dataclass(frozen=True)
class Ending:
    """What an ended attempt means for its job: the job's next status, its reason, what it waits for, the attempt's
    outcome, and whether the ending used one of its restarts."""

    status: str
    reason: str
    outcome: str
    waiting_for: str = ""
    restart: bool = False

    @property
    def again(self) -> bool:
        """Return True when the job goes back to the queue (or is held paused) instead of ending."""
        return self.status in ("queued", "paused")


def resume_point(db: Session, job_id: str, run_dir: str) -> ResumePoint | None:
    """Return the latest checkpoint registered for the run that still lies in its output folder, or None."""
    if not run_dir:
        return None
    rows = db.execute(select(Artifact.path, Artifact.step).where(Artifact.run_id == job_id,
                                                                  Artifact.kind == KIND_CHECKPOINT)
                      .order_by(Artifact.step.desc().nulls_last(), Artifact.created_at.desc()))
    for path, step in rows:
        if os.path.isdir(path) and inside_out_folder(path, run_dir):
            return ResumePoint(Path(path), step)
    return None


def drop_replayed(db: Session, job_id: str, resume: ResumePoint | None) -> None:
    """Before a later attempt starts from `resume`: drop the metrics of the run beyond its step (every stepped
    point when it starts over), which the attempt reports again."""
    stale = delete(MetricPoint).where(MetricPoint.run_id == job_id, MetricPoint.step.is_not(None))
    if resume is not None and resume.step is not None:
        stale = stale.where(MetricPoint.step > resume.step)
    db.execute(stale)


def begin_attempt(db: Session, job: Job, *, resume: ResumePoint | None, now: float, epoch: int = 0) -> int:
    """Count a new attempt of `job`, started at `now` from `resume` by the leader of fencing token `epoch`, and
    return its number."""
    number = (job.attempts or 0) + 1
    job.attempts = number
    job.attempt_started_at = now
    job.resumed_from = str(resume.path) if resume is not None else ""
    job.resume_step = resume.step if resume is not None else None
    clear_interrupt(job)
    db.add(JobAttempt(job_id=job.id, number=number, started_at=now, outcome="", reason="",
                      resumed_from=job.resumed_from, resume_step=job.resume_step, gpus=job.requested_gpus,
                      executor_ref="", epoch=epoch))
    return number


def end_attempt(db: Session, job: Job, *, outcome: str, reason: str, now: float) -> None:
    """Record how the current attempt of `job` ended (a job that never started has no attempt to end)."""
    attempt = db.scalar(select(JobAttempt).where(JobAttempt.job_id == job.id, JobAttempt.number == job.attempts))
    if attempt is None or attempt.ended_at is not None:
        return
    attempt.ended_at, attempt.outcome, attempt.reason = now, outcome, reason[:2000]
    attempt.executor_ref = job.executor_ref


def history(db: Session, job_id: str) -> list[JobAttempt]:
    """Return the attempts of a job, first to last."""
    return list(db.scalars(select(JobAttempt).where(JobAttempt.job_id == job_id).order_by(JobAttempt.number)))


def completed(db: Session, job: Job) -> bool:
    """Return whether the current attempt of `job` registered its final model (it finished its training, even when
    it was asked to checkpoint too late to stop early)."""
    since = job.attempt_started_at if job.attempt_started_at is not None else 0.0
    return db.scalar(select(Artifact.id).where(Artifact.run_id == job.id, Artifact.kind == KIND_MODEL,
                                               Artifact.created_at >= since).limit(1)) is not None


def next_step(job: Job, *, status: str, reason: str, lost: bool, limit: bool, after_loss: int,
              finished: bool = False) -> Ending:
    """Return what the attempt of `job` that ended with `status` and `reason` means for the job.

    `lost`: the job's process, node or console vanished; `limit`: the engine ended it for exceeding a limit (never
    restarted: it would exceed it again); `finished`: the attempt registered its final model (`completed`). A stop on
    request always ends the job; an interrupt (preempt, pause) puts it back whatever its exit, unless it succeeded
    having finished its training; a failure restarts within the job's `max_restarts` (a loss within
    `after_loss`)."""
    if job.stop_requested:
        return Ending("stopped", reason, "stopped")
    if job.interrupt and status == "succeeded" and finished:
        return Ending("succeeded", reason, "succeeded")
    if job.interrupt == "preempt":
        by = f" by {job.interrupt_by}" if job.interrupt_by else ""
        return Ending("queued", f"preempted{by}; it resumes from its latest checkpoint when capacity frees",
                      "preempted", waiting_for="capacity")
    if job.interrupt == "pause":
        by = f" by {job.interrupt_by}" if job.interrupt_by else ""
        return Ending("paused", f"paused{by} after a checkpoint; `sf job resume {job.id}` puts it back in the queue",
                      "paused")
    if status != "failed":
        return Ending(status, reason, status)
    outcome = "lost" if lost else "failed"
    allowed = max(job.max_restarts, after_loss) if lost else job.max_restarts
    if not limit and job.restarts < allowed:
        left = allowed - job.restarts - 1
        said = f"attempt {job.attempts} {'was lost' if lost else 'failed'}: {reason}" if job.attempts else reason
        return Ending("queued", f"{said}; it starts again from its latest checkpoint ({left} restart"
                                f"{'' if left == 1 else 's'} left)", outcome, waiting_for="capacity", restart=True)
    return Ending("failed", reason, outcome)
