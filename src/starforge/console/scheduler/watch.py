"""Phase 3, watch: poll started jobs, deliver stop requests, record how each attempt ended and reconcile after a
restart.

A stop is delivered once per job (SIGTERM, then SIGKILL after the grace period, by the engine). A job asked to
checkpoint and stop (preempted, or paused: `jobs.interrupt`) learns it through its control call and is stopped the
same way once `preemption.grace_seconds` have passed. When an attempt ends, `attempts.next_step` says what it means:
the job's final status (its run tokens revoked, its capacity released, the follow-ups of a successful run created),
or back to the queue as the same job (preempted, restarted) or held (paused). The GPU-seconds of the attempt are
charged to its account's fair-share usage. A job handed to a cluster engine that queues it (Slurm) stays
`submitted`, with the engine's waiting reason, until the engine runs it.
"""

from __future__ import annotations

import json

from sqlalchemy import select
from sqlalchemy.orm import Session

from ...engines import ExecState
from ...engines.base import ref_parts
from ...engines.routing import Engines
from ..services.context import Runtime
from ..services.jobs import attempts
from ..services.jobs.failure_line import failure_reason
from ..services.jobs.followups import create_followups
from ..services.jobs.interrupts import grace_over
from ..services.jobs.rows import set_status, start_again
from ..services.quota import shares
from ..store.models import Job, JobAttempt
from .clock import Clock
from .records import queued_reason, revoke_run_tokens

__all__ = ["Watcher"]


class Watcher:
    """Follow the started jobs of the console's engines to their end (the watch phase and the restart's reconcile)."""

    def __init__(self, rt: Runtime, engines: Engines, clock: Clock) -> None:
        self.rt = rt
        self.engines = engines
        self.clock = clock
        self.signalled: set[str] = set()  # jobs whose stop was delivered to their engine (scheduler thread only)

    def watch(self) -> int:
        """Poll running jobs, deliver stops and record final statuses; return how many ended."""
        now = self.clock.now()
        with self.rt.db.write() as db:
            for job in db.scalars(select(Job).where(Job.status.in_(("submitted", "preparing")),
                                                    Job.stop_requested.is_(True), Job.executor_ref == "")):
                set_status(db, job, "stopped", reason=f"{job.stop_reason or 'stopped on request'} before it started",
                           at=now)
        with self.rt.db.read() as db:
            running = [(j.id, j.executor_ref, j.stop_requested, j.status, j.interrupt, j.interrupt_at) for j in
                       db.scalars(select(Job).where(Job.status.in_(("submitted", "running")), Job.executor_ref != ""))]
        grace = self.rt.settings.preemption.grace_seconds
        for job_id, ref, stop_requested, status, interrupt, interrupt_at in running:
            if job_id in self.signalled:
                continue
            # a job asked to checkpoint is stopped once its grace is over (at once while an engine still queues it)
            due = interrupt and (status == "submitted" or grace_over(interrupt_at, grace=grace, now=now))
            if stop_requested or due:
                self.engines.stop(ref, self.rt.settings.stop_grace_seconds)
                self.signalled.add(job_id)
        states = self.engines.poll_many([row[1] for row in running])
        ended = 0
        for job_id, ref, _stop, status, _interrupt, _at in running:
            state = states[ref]
            if state.finished:
                self.finish(job_id, state)
                ended += 1
            elif (state.state == "running" and status == "submitted") or state.state == "pending":
                self._engine_progress(job_id, ref, state)
        return ended

    def _engine_progress(self, job_id: str, ref: str, state: ExecState) -> None:
        """Record that a job an engine queued now runs, or why it still waits (when that changed)."""
        name = ref_parts(ref)[0]
        with self.rt.db.write() as db:
            job = db.get(Job, job_id)
            if job is None or job.status not in ("submitted", "running") or job.executor_ref != ref:
                return
            if state.state == "running" and job.status == "submitted":
                set_status(db, job, "running", reason=f"started on the {name} executor", at=self.clock.now())
            elif state.state == "pending" and job.status == "submitted":
                set_status(db, job, "submitted", reason=queued_reason(name, ref, state), at=self.clock.now())

    def finish(self, job_id: str, state: ExecState) -> None:
        """Record how the attempt of a job whose process ended went: its final status (its run token revoked, its
        follow-ups queued), or back to the queue (preempted, restarted) or held (paused) as the same job."""
        now = self.clock.now()
        with self.rt.db.write() as db:
            job = db.get(Job, job_id)
            if job is None or job.status not in ("submitted", "running"):
                return
            job.exit_code = state.exit_code
            status, reason = _outcome(job, state)
            finished = bool(job.interrupt) and status == "succeeded" and attempts.completed(db, job)
            ending = attempts.next_step(job, status=status, reason=reason, lost=state.state == "lost",
                                        limit=bool(state.reason), after_loss=self.rt.settings.restarts.after_loss,
                                        finished=finished)
            attempts.end_attempt(db, job, outcome=ending.outcome, reason=reason, now=now)
            self._charge(db, job, now)
            revoke_run_tokens(db, job.id, now=now)
            if ending.again:
                self._again(db, job, ending, now)
            else:
                final = ending.reason
                if ending.status == "failed" and job.attempts > 1:
                    final = _every_reason(attempts.history(db, job.id))
                set_status(db, job, ending.status, reason=final, at=now)
                if ending.status == "succeeded" and not job.action:
                    create_followups(db, parent=job, catalog=self.rt.catalog, settings=self.rt.settings)
        self.signalled.discard(job_id)

    def _charge(self, db: Session, job: Job, now: float) -> None:
        """Charge the GPU-seconds of the attempt that ended to its account's fair-share usage."""
        started = job.attempt_started_at if job.attempt_started_at is not None else job.started_at
        if started is None or now <= started:
            return
        shares.charge(db, job.user_id, json.loads(job.series_gpus or "{}"), now - started, now=now,
                      half_life=self.rt.settings.fair_share.half_life_seconds)

    @staticmethod
    def _again(db: Session, job: Job, ending: attempts.Ending, now: float) -> None:
        """Put `job` back in the queue (or hold it paused) as the same job: its next attempt resumes."""
        if ending.restart:
            job.restarts += 1
        start_again(db, job, ending.status, reason=ending.reason, waiting_for=ending.waiting_for, at=now)

    def reconcile(self) -> None:
        """After a restart: re-attach live jobs and finish the ones that ended or vanished while we were away.

        Jobs left `preparing` are placed again (`submitted`): the next cycle builds their runtime again, or finds
        it built (the cache is on disk; an interrupted build is removed and started over).
        """
        now = self.clock.now()
        with self.rt.db.write() as db:
            for job in db.scalars(select(Job).where(Job.status == "preparing", Job.executor_ref == "")):
                job.lease_owner, job.lease_token, job.lease_expires_at = "", "", None
                set_status(db, job, "submitted", reason="the console restarted while the job's runtime was built; "
                                                        "preparing it again", at=now)
        with self.rt.db.read() as db:
            refs = {j.executor_ref: j.id for j in db.scalars(select(Job).where(Job.status.in_(("submitted", "running"))))
                    if j.executor_ref}
            orphans = [j.id for j in db.scalars(select(Job).where(Job.status == "running", Job.executor_ref == ""))]
        for ref, state in self.engines.reconcile(list(refs)).items():
            if state.finished:
                self.finish(refs[ref], state)
        for job_id in orphans:
            self.finish(job_id, ExecState("lost", detail="the console restarted before the job was started"))


def _outcome(job: Job, state: ExecState) -> tuple[str, str]:
    """Return the status and reason the ended process of `job` means on its own (before restarts)."""
    if state.reason:
        return "failed", state.reason
    if job.stop_requested:
        return "stopped", job.stop_reason or "stopped on request"
    if state.state == "lost":
        return "failed", state.detail or "the job's process vanished"
    if state.exit_code == 0:
        return "succeeded", "exit code 0"
    if state.signal:
        return "failed", f"killed by signal {state.signal}"
    return "failed", failure_reason(state.exit_code, job.run_dir)


def _every_reason(history: list[JobAttempt]) -> str:
    """Return the reason of a job that failed after several attempts: every attempt's, in order."""
    said = "; ".join(f"attempt {a.number}: {a.reason or a.outcome}" for a in history)
    return f"failed after {len(history)} attempts: {said}"
