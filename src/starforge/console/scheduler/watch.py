"""Phase 3, watch: poll started jobs, deliver stop requests, record final statuses and reconcile after a restart.

A stop is delivered once per job (SIGTERM, then SIGKILL after the grace period, by the engine); a job that ends is
given its final status, its run tokens are revoked, its capacity is released (its row is no longer active) and the
follow-up jobs of a successful run are created. A job handed to a cluster engine that queues it (Slurm) stays
`submitted`, with the engine's waiting reason, until the engine runs it.
"""

from __future__ import annotations

from sqlalchemy import select

from ...engines import ExecState
from ...engines.base import ref_parts
from ...engines.routing import Engines
from ..services.context import Runtime
from ..services.jobs.failure_line import failure_reason
from ..services.jobs.followups import create_followups
from ..services.jobs.rows import set_status
from ..store.models import Job
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
            running = [(j.id, j.executor_ref, j.stop_requested, j.status) for j in
                       db.scalars(select(Job).where(Job.status.in_(("submitted", "running")), Job.executor_ref != ""))]
        for job_id, ref, stop_requested, _status in running:
            if stop_requested and job_id not in self.signalled:
                self.engines.stop(ref, self.rt.settings.stop_grace_seconds)
                self.signalled.add(job_id)
        states = self.engines.poll_many([ref for _job_id, ref, _stop, _status in running])
        ended = 0
        for job_id, ref, _stop, status in running:
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
        """Record the final status of a job whose process ended, revoke its run token, queue its follow-ups."""
        now = self.clock.now()
        with self.rt.db.write() as db:
            job = db.get(Job, job_id)
            if job is None or job.status not in ("submitted", "running"):
                return
            job.exit_code = state.exit_code
            if state.reason:
                status, reason = "failed", state.reason
            elif job.stop_requested:
                status, reason = "stopped", job.stop_reason or "stopped on request"
            elif state.state == "lost":
                status, reason = "failed", state.detail or "the job's process vanished"
            elif state.exit_code == 0:
                status, reason = "succeeded", "exit code 0"
            elif state.signal:
                status, reason = "failed", f"killed by signal {state.signal}"
            else:
                status, reason = "failed", failure_reason(state.exit_code, job.run_dir)
            set_status(db, job, status, reason=reason, at=now)
            revoke_run_tokens(db, job.id, now=now)
            if status == "succeeded" and not job.action:
                create_followups(db, parent=job, catalog=self.rt.catalog, settings=self.rt.settings)
        self.signalled.discard(job_id)

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
