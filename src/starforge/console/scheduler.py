"""The scheduler: place waiting jobs on capacity, launch placed jobs, and watch running ones until they end.

One cycle, in three phases (each logs its duration):
1. place: under the capacity lock, take every waiting job in queue order (quota priority, then submission time),
   decide on a snapshot with `capacity.decide` (pure), assume each placement, and commit the new statuses at once;
2. launch: claim placed jobs with a lease (owner, token, expiry), prepare their run directory and start them on
   the executor; on failure undo the placement (requeue with the reason) or fail the job if it can never start;
3. watch: poll running jobs, deliver stop requests (SIGTERM, then SIGKILL after the grace period), record the final
   status, release capacity and create the follow-up jobs of a successful run.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import or_, select

from ..contract import parse_or_raise
from .executors import ExecState, Executor, ExecutorError, JobRefused, LaunchRequest, Limits
from .launch import Inputs, LaunchFailure, prepare_run
from .runtime import Runtime
from .services import accounts
from .services.capacity import Demand, Fit, assume, block, decide, take_snapshot
from .services.followups import create_followups
from .services.jobs import WAITING, set_status
from .services.quota import get_quota, quotas_for
from .store.models import Job, Token

__all__ = ["BackgroundLoop", "Scheduler"]

log = logging.getLogger("starforge.scheduler")
LEASE_SECONDS = 120.0


@dataclass(frozen=True)
class _Claim:
    job_id: str
    token: str


class Scheduler:
    """Advance jobs through queued → submitted → running → a final status, with one executor."""

    def __init__(self, rt: Runtime, executor: Executor) -> None:
        self.rt = rt
        self.executor = executor
        self.owner = f"console-{secrets.token_hex(4)}"
        self._signalled: set[str] = set()

    # phase 1 -------------------------------------------------------------------------------------------------
    def place(self) -> int:
        """Decide every waiting job on one snapshot and commit the placements; return how many were placed."""
        with self.rt.db.write() as db:
            self.rt.db.lock_capacity(db)
            waiting = db.execute(
                select(Job.id, Job.user_id, Job.username, Job.requested_gpus, Job.series_gpus, Job.priority,
                       Job.status, Job.waiting_for)
                .where(Job.status.in_(WAITING)).order_by(Job.priority.desc(), Job.submitted_at, Job.id)
            ).all()
            if not waiting:
                return 0
            snap = take_snapshot(db, self.rt.capacity)
            snap.waiting = {}
            quotas = quotas_for(db, {row[1] for row in waiting}, self.rt.settings.quota)
            series_cache: dict[str, dict[str, int]] = {}  # the same few shapes repeat across thousands of jobs
            changes: list[tuple[str, Fit, str]] = []
            for job_id, user_id, _username, gpus, series_json, priority, status, waiting_for in waiting:
                quota = quotas[user_id]
                series = series_cache.get(series_json)
                if series is None:
                    series = series_cache[series_json] = json.loads(series_json or "{}")
                demand = Demand(job_id, user_id, gpus, series, priority, quota.max_concurrent_gpus,
                                quota.max_concurrent_jobs)
                fit, reason = decide(snap, demand)
                if fit is Fit.FITS:
                    assume(snap, demand)
                    changes.append((job_id, fit, ""))
                    continue
                if fit in (Fit.CAPACITY_BUSY, Fit.BEHIND_QUEUE):
                    block(snap, demand)
                # a waiting job is rewritten only when what it waits for changes, not on every cycle
                if status != fit.status or waiting_for != fit.waiting_for:
                    changes.append((job_id, fit, reason))
            placed = 0
            with db.no_autoflush:
                rows = {job.id: job for job in db.scalars(select(Job).where(Job.id.in_([c[0] for c in changes])))}
            for job_id, fit, reason in changes:
                job = rows[job_id]
                if fit is Fit.FITS:
                    set_status(db, job, "submitted", reason="placed")
                    job.reason = ""
                    placed += 1
                else:
                    set_status(db, job, fit.status, reason=reason, waiting_for=fit.waiting_for)
        return placed

    # phase 2 -------------------------------------------------------------------------------------------------
    def _claim(self) -> list[_Claim]:
        now = time.time()
        claims = []
        with self.rt.db.write() as db:
            rows = db.scalars(select(Job).where(
                Job.status == "submitted", Job.executor_ref == "",
                or_(Job.lease_expires_at.is_(None), Job.lease_expires_at < now)).limit(32))
            for job in rows:
                token = secrets.token_hex(8)
                job.lease_owner, job.lease_token, job.lease_expires_at = self.owner, token, now + LEASE_SECONDS
                claims.append(_Claim(job.id, token))
        return claims

    def launch(self) -> int:
        """Start every placed job this console could claim; return how many started."""
        started = 0
        for claim in self._claim():
            try:
                request = self._prepare(claim)
                ref = self.executor.submit(request)
            except (LaunchFailure, JobRefused) as exc:
                self._finish_claim(claim, status="failed", reason=str(exc))
                continue
            except ExecutorError as exc:
                self._finish_claim(claim, status="queued", reason=f"executor unavailable: {exc}; requeued",
                                   waiting_for="capacity")
                continue
            except Exception as exc:  # never leave a claimed job `submitted` forever: it fails with the cause
                log.exception("job %s could not be launched", claim.job_id)
                self._finish_claim(claim, status="failed",
                                   reason=f"the job could not be launched: {type(exc).__name__}: {exc}")
                continue
            with self.rt.db.write() as db:
                job = db.get(Job, claim.job_id)
                if job is None or job.lease_token != claim.token or job.status != "submitted":
                    self.executor.stop(ref, 0)  # someone else owns it now (or it was stopped): never run twice
                    continue
                job.executor_ref = ref
                job.run_dir = str(request.run_dir)
                job.lease_owner, job.lease_token, job.lease_expires_at = "", "", None
                set_status(db, job, "running", reason=f"started on the {self.executor.name} executor")
                started += 1
        return started

    def _finish_claim(self, claim: _Claim, *, status: str, reason: str, waiting_for: str = "") -> None:
        with self.rt.db.write() as db:
            job = db.get(Job, claim.job_id)
            if job is None or job.lease_token != claim.token:
                return
            job.lease_owner, job.lease_token, job.lease_expires_at = "", "", None
            set_status(db, job, status, reason=reason, waiting_for=waiting_for)
            if status == "failed":
                _revoke_run_tokens(db, job.id)
        log.warning("job %s: %s", claim.job_id, reason)

    def _prepare(self, claim: _Claim) -> LaunchRequest:
        with self.rt.db.write() as db:
            job = db.get(Job, claim.job_id)
            assert job is not None
            spec = parse_or_raise(json.loads(job.spec_json))
            resolved = json.loads(job.resolved_json or "{}")
            user = accounts.UserView(job.user_id, job.username, "", "", False)
            token = accounts.issue_run_token(db, user, job.id)
            quota_hours = get_quota(db, user, self.rt.settings.quota).max_job_hours
            snapshot = (job.id, job.username, job.profile, job.package_sha, job.action, job.parent_id,
                        json.loads(job.series_gpus or "{}"))
        run_id, username, profile, package_sha, action, parent_id, series_gpus = snapshot
        recipe = self.rt.catalog.get(spec.spec.recipe.name)
        if recipe is None:
            raise LaunchFailure(f"recipe {spec.spec.recipe.name} is no longer in the served catalog")
        corpus = next((path for key, path in resolved.get("assets", {}).items()
                       if key.startswith("spec.data.corpus=") and path), "")
        plugins = tuple((p.leaf, path) for p, path in zip(spec.spec.plugins, resolved.get("plugins", []), strict=False)
                        if path)
        inputs = Inputs(init_from=resolved.get("init_from", ""), corpus=corpus, plugins=plugins)
        hours = [h for h in (self.rt.settings.profile_max_hours.get(profile, 0.0), quota_hours) if h > 0]
        limits = Limits(wall_seconds=min(hours) * 3600 if hours else None)  # the profile's or the quota's, shorter
        return prepare_run(self.rt, spec=spec, recipe=recipe, run_id=run_id, username=username, profile=profile,
                           package_sha=package_sha, inputs=inputs, run_token=token, action=action,
                           parent_id=parent_id, devices=series_gpus, job_paths=self.executor.job_paths,
                           limits=limits)

    # phase 3 -------------------------------------------------------------------------------------------------
    def watch(self) -> int:
        """Poll running jobs, deliver stops and record final statuses; return how many ended."""
        with self.rt.db.write() as db:
            for job in db.scalars(select(Job).where(Job.status == "submitted", Job.stop_requested.is_(True),
                                                    Job.executor_ref == "")):
                set_status(db, job, "stopped", reason=f"{job.stop_reason or 'stopped on request'} before it started")
        with self.rt.db.read() as db:
            running = [(j.id, j.executor_ref, j.stop_requested) for j in
                       db.scalars(select(Job).where(Job.status == "running", Job.executor_ref != ""))]
        ended = 0
        for job_id, ref, stop_requested in running:
            if stop_requested and job_id not in self._signalled:
                self.executor.stop(ref, self.rt.settings.stop_grace_seconds)
                self._signalled.add(job_id)
            state = self.executor.poll(ref)
            if state.finished:
                self.finish(job_id, state)
                ended += 1
        return ended

    def finish(self, job_id: str, state: ExecState) -> None:
        """Record the final status of a job whose process ended, revoke its run token, queue its follow-ups."""
        with self.rt.db.write() as db:
            job = db.get(Job, job_id)
            if job is None or job.status != "running":
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
                status, reason = "failed", f"exit code {state.exit_code}"
            set_status(db, job, status, reason=reason)
            _revoke_run_tokens(db, job.id)
            if status == "succeeded" and not job.action:
                create_followups(db, parent=job, catalog=self.rt.catalog, settings=self.rt.settings)
        self._signalled.discard(job_id)

    def reconcile(self) -> None:
        """After a restart: re-attach live jobs and finish the ones that ended or vanished while we were away."""
        with self.rt.db.read() as db:
            refs = {j.executor_ref: j.id for j in db.scalars(select(Job).where(Job.status == "running"))
                    if j.executor_ref}
            orphans = [j.id for j in db.scalars(select(Job).where(Job.status == "running", Job.executor_ref == ""))]
        for ref, state in self.executor.reconcile(list(refs)).items():
            if state.finished:
                self.finish(refs[ref], state)
        for job_id in orphans:
            self.finish(job_id, ExecState("lost", detail="the console restarted before the job was started"))

    def cycle(self) -> None:
        """Run the three phases once."""
        for phase in (self.place, self.launch, self.watch):
            start = time.perf_counter()
            count = phase()
            elapsed = (time.perf_counter() - start) * 1000
            if count:
                log.info("%s: %d job(s) in %.1f ms", phase.__name__, count, elapsed)


def _revoke_run_tokens(db: Any, job_id: str) -> None:
    for token in db.scalars(select(Token).where(Token.kind == "run", Token.run_id == job_id,
                                                Token.revoked_at.is_(None))):
        token.revoked_at = time.time()


class BackgroundLoop:
    """Run the scheduler on a thread: every `interval` seconds, or at once when the runtime is woken."""

    def __init__(self, rt: Runtime, scheduler: Scheduler, interval: float) -> None:
        self.rt = rt
        self.scheduler = scheduler
        self.interval = interval
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="starforge-scheduler", daemon=True)

    def start(self) -> None:
        """Reconcile with the executor, then start cycling."""
        self.scheduler.reconcile()
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self.rt.wakeup.clear()
            try:
                self.scheduler.cycle()
            except Exception:  # a failed cycle must not stop the loop; the next cycle retries
                log.exception("scheduler cycle failed")
            self.rt.wakeup.wait(self.interval)

    def stop(self) -> None:
        """Stop after the current cycle (running jobs keep running; a restart re-attaches them)."""
        self._stopping.set()
        self.rt.wakeup.set()
        self._thread.join(timeout=10)
