"""The scheduler: place waiting jobs on capacity, launch placed jobs, and watch running ones until they end.

One cycle, in three phases (each logs its duration):
1. place: under the capacity lock, take every waiting job in queue order (quota priority, then submission time),
   check the account's daily GPU-hour budget again (`budget.over_budget`, on ledgers of the hours run today and
   reserved by placed and running jobs, each placement charged), decide on a snapshot with `capacity.decide`
   (pure), assume each placement, and commit the new statuses at once; a job the budget no longer fits waits
   `queued` with the quota reason (a follow-up step is exempt, as at its admission);
2. launch: claim placed jobs with a lease (owner, token, expiry), prepare their run directory and start them on
   the executor; on failure undo the placement (requeue with the reason) or fail the job if it can never start.
   A job whose recipe runtime is not built yet is `preparing`: its build runs on a worker thread of `Runtimes`
   (one build per runtime, its output in the job's log) and a later cycle starts the job on it, or fails the job
   with the installer's error; the scheduler thread never waits for a build;
3. watch: poll running jobs, deliver stop requests (SIGTERM, then SIGKILL after the grace period), record the final
   status, release capacity and create the follow-up jobs of a successful run.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass
from typing import Any

from sqlalchemy import or_, select

from ..contract import parse_or_raise
from ..engines import ExecState, Executor, ExecutorError, JobRefused, LaunchRequest, Limits
from ..engines.base import ref_parts
from ..engines.routing import Engines
from ..engines.runtimes import JobRuntime, RuntimeRecord, Runtimes, RuntimeSpec, job_kind
from .launch import LaunchFailure, job_inputs, prepare_run, run_dir_of
from .services import maintenance
from .services.accounts import credentials as accounts
from .services.context import Runtime
from .services.jobs.failure_line import failure_reason
from .services.jobs.followups import create_followups
from .services.jobs.rows import QUEUE_ORDER, WAITING, set_status
from .services.logs.store import log_path
from .services.quota.budget import job_hours, ledgers, over_budget, wall_hours
from .services.quota.capacity import Demand, Fit, assume, block, decide, take_snapshot
from .services.quota.caps import get_quota, quotas_for
from .services.sweeps.rows import sweep_limits
from .store.models import Job, Token

__all__ = ["BackgroundLoop", "Scheduler"]

log = logging.getLogger("starforge.scheduler")
LEASE_SECONDS = 120.0
REASON_CHARS = 2000  # a failed build's reason: the installer's error lines, bounded


@dataclass(frozen=True)
class _Claim:
    job_id: str
    token: str


@dataclass(frozen=True)
class _Build:
    """A `preparing` job of this console: the build its runtime waits for."""

    claim: _Claim
    spec: RuntimeSpec
    future: Future[RuntimeRecord]


def build_failure(spec: RuntimeSpec, exc: BaseException) -> str:
    """Return a failed build's reason for its jobs: the runtime, then the installer's error, bounded."""
    text = f"the runtime {spec.label} could not be built: {exc}"
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


class Scheduler:
    """Advance jobs through queued → submitted → running → a final status, on the console's engines.

    A job handed to a cluster engine that queues it (Slurm) stays `submitted`, with the engine's waiting reason,
    until the engine runs it.
    """

    def __init__(self, rt: Runtime, executor: Executor | Engines, *, runtimes: Runtimes | None = None) -> None:
        self.rt = rt
        self.engines = executor if isinstance(executor, Engines) else Engines.single(executor)
        self.runtimes = runtimes or Runtimes(rt.settings.runtimes)  # recipe runtimes: plans, cache, build workers
        self.owner = f"console-{secrets.token_hex(4)}"
        self._signalled: set[str] = set()
        self._preparing: dict[str, _Build] = {}  # job id -> the build its runtime waits for (scheduler thread only)

    # phase 1 -------------------------------------------------------------------------------------------------
    def place(self) -> int:
        """Decide every waiting job on one snapshot and commit the placements; return how many were placed.

        While the console is in maintenance nothing is placed: the waiting jobs are held, with the note as reason."""
        held = self.rt.maintenance.current()
        if held.on:
            return self._hold(held.note)
        with self.rt.db.write() as db:
            self.rt.db.lock_capacity(db)
            waiting = db.execute(
                select(Job.id, Job.user_id, Job.requested_gpus, Job.series_gpus, Job.priority, Job.status,
                       Job.waiting_for, Job.sweep_id, Job.profile, Job.action)
                .where(Job.status.in_(WAITING)).order_by(*QUEUE_ORDER)
            ).all()
            if not waiting:
                return 0
            snap = take_snapshot(db, self.rt.capacity)
            snap.waiting = {}
            quotas = quotas_for(db, {row[1] for row in waiting}, self.rt.settings.quota)
            limits = sweep_limits(db, {(row[1], row[7]) for row in waiting if row[7]})  # `sf sweep --max-parallel`
            hours_of = self.rt.settings.profile_max_hours
            books = ledgers(db, quotas, hours_of, waiting=False)  # the daily budget: run today, placed and running
            series_cache: dict[str, dict[str, int]] = {}  # the same few shapes repeat across thousands of jobs
            changes: list[tuple[str, Fit, str]] = []
            for job_id, user_id, gpus, series_json, priority, status, waiting_for, sweep_id, profile, action in waiting:
                quota = quotas[user_id]
                series = series_cache.get(series_json)
                if series is None:
                    series = series_cache[series_json] = json.loads(series_json or "{}")
                demand = Demand(job_id, user_id, gpus, series, priority, quota.max_concurrent_gpus,
                                quota.max_concurrent_jobs, sweep_id, limits.get((user_id, sweep_id), 0))
                hours = job_hours(gpus=gpus, profile=profile, quota=quota, profile_max_hours=hours_of)
                over = None if action else over_budget(books.get(user_id), hours, gpus=gpus,
                                                       counted="your placed and running jobs")
                fit, reason = (Fit.QUOTA_HOURS, f"quota: {over.message}; it starts when the budget renews at 00:00 "
                               "UTC or once a running job ends early") if over is not None else decide(snap, demand)
                if fit is Fit.FITS:
                    assume(snap, demand)
                    if user_id in books:
                        books[user_id] = books[user_id].charged(hours)
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

    def _hold(self, note: str) -> int:
        """Keep every waiting job waiting for the end of maintenance (each one rewritten once); return 0."""
        reason = f"the console is in maintenance: {note}" if note else "the console is in maintenance"
        with self.rt.db.write() as db:
            for job in db.scalars(select(Job).where(Job.status.in_(WAITING), or_(
                    Job.waiting_for != maintenance.WAITING_FOR, Job.reason != reason))):
                set_status(db, job, job.status, reason=reason, waiting_for=maintenance.WAITING_FOR)
        return 0

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
        """Start the prepared jobs whose runtime is built, then every placed job this console could claim."""
        started = self._advance_preparing()
        for claim in self._claim():
            started += self._launch(claim)
        return started

    def _launch(self, claim: _Claim, built: RuntimeRecord | None = None) -> int:
        """Start one claimed job (on `built`, or on the runtime its plan names); return 1 when it started.

        A job whose runtime must be built first becomes `preparing` instead, and 0 is returned.
        """
        try:
            if built is None:
                spec = self._runtime_plan(claim)
                built = self.runtimes.ready(spec) if spec is not None else None
                if spec is not None and built is None:
                    self._start_build(claim, spec)
                    return 0
            runtime = self.runtimes.job_runtime(built) if built is not None else None
            executor, request = self._prepare(claim, runtime)
            ref = executor.submit(request)
            state = executor.poll(ref)
        except (LaunchFailure, JobRefused) as exc:
            self._finish_claim(claim, status="failed", reason=str(exc))
            return 0
        except ExecutorError as exc:
            self._finish_claim(claim, status="queued", reason=f"executor unavailable: {exc}; requeued",
                               waiting_for="capacity")
            return 0
        except Exception as exc:  # never leave a claimed job `submitted` forever: it fails with the cause
            log.exception("job %s could not be launched", claim.job_id)
            self._finish_claim(claim, status="failed",
                               reason=f"the job could not be launched: {type(exc).__name__}: {exc}")
            return 0
        with self.rt.db.write() as db:
            job = db.get(Job, claim.job_id)
            if job is None or job.lease_token != claim.token or job.status not in ("submitted", "preparing"):
                executor.stop(ref, 0)  # someone else owns it now (or it was stopped): never run twice
                return 0
            job.executor_ref = ref
            job.run_dir = str(request.run_dir)
            job.lease_owner, job.lease_token, job.lease_expires_at = "", "", None
            on = f" on runtime {runtime.label}" if runtime is not None else ""
            if state.state == "pending":
                set_status(db, job, "submitted", reason=_queued_reason(executor.name, ref, state))
            else:
                set_status(db, job, "running", reason=f"started on the {executor.name} executor{on}")
        return 1

    def _runtime_plan(self, claim: _Claim) -> RuntimeSpec | None:
        """Return the runtime a claimed job needs built (None: it runs on the console's interpreter)."""
        with self.rt.db.read() as db:
            job = db.get(Job, claim.job_id)
            assert job is not None
            spec = parse_or_raise(json.loads(job.spec_json))
            series = list(json.loads(job.series_gpus or "{}"))
        recipe = self.rt.catalog.get(spec.spec.recipe.name)
        if recipe is None:
            raise LaunchFailure(f"recipe {spec.spec.recipe.name} is no longer in the served catalog")
        version = spec.spec.framework.version or recipe.runtime.default_version
        kind = job_kind(series, self.rt.settings.runtimes)
        return self.runtimes.plan(recipe, version, kind).spec

    def _start_build(self, claim: _Claim, spec: RuntimeSpec) -> None:
        """Make a claimed job `preparing` and build (or join the build of) its runtime on a worker thread."""
        with self.rt.db.write() as db:
            job = db.get(Job, claim.job_id)
            if job is None or job.lease_token != claim.token or job.status != "submitted":
                return
            exp = parse_or_raise(json.loads(job.spec_json)).spec.source.exp  # the folder `prepare_run` lays out
            run_dir = run_dir_of(self.rt.settings.state_dir, job.username, exp, job.id)
            log_file = log_path(run_dir)
            log_file.parent.mkdir(parents=True, exist_ok=True)  # the build writes into the job's log from now on
            job.run_dir = str(run_dir)  # `sf job logs` shows the build while the job prepares
            set_status(db, job, "preparing", reason=f"building runtime {spec.label}")
        future = self.runtimes.prepare(spec, log_file)
        self._preparing[claim.job_id] = _Build(claim, spec, future)
        future.add_done_callback(lambda _done: self.rt.wake())
        log.info("job %s: preparing runtime %s", claim.job_id, spec.label)

    def _advance_preparing(self) -> int:
        """Start the preparing jobs whose build finished, fail those whose build failed; return how many started."""
        if not self._preparing:
            return 0
        with self.rt.db.read() as db:
            rows = db.execute(select(Job.id, Job.status, Job.lease_token)
                              .where(Job.id.in_(list(self._preparing)))).all()
        current = {job_id: (status, token) for job_id, status, token in rows}
        started = 0
        for job_id, build in list(self._preparing.items()):
            if current.get(job_id) != ("preparing", build.claim.token):
                del self._preparing[job_id]  # stopped while preparing (the build goes on for others and the cache)
                continue
            if not build.future.done():
                continue
            del self._preparing[job_id]
            try:
                record = build.future.result()
            except CancelledError:  # the console is stopping: the next one builds again (see `reconcile`)
                continue
            except Exception as exc:
                self._finish_claim(build.claim, status="failed", reason=build_failure(build.spec, exc))
                continue
            started += self._launch(build.claim, record)
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

    def _prepare(self, claim: _Claim, runtime: JobRuntime | None) -> tuple[Executor, LaunchRequest]:
        with self.rt.db.write() as db:
            job = db.get(Job, claim.job_id)
            assert job is not None
            spec = parse_or_raise(json.loads(job.spec_json))
            resolved = json.loads(job.resolved_json or "{}")
            user = accounts.UserView(job.user_id, job.username, "", "", False)
            token = accounts.issue_run_token(db, user, job.id)
            quota = get_quota(db, user, self.rt.settings.quota)
            snapshot = (job.id, job.username, job.profile, job.package_sha, job.action, job.parent_id,
                        json.loads(job.series_gpus or "{}"), job.requested_gpus)
        run_id, username, profile, package_sha, action, parent_id, series_gpus, gpus = snapshot
        executor = self.engines.for_series(series_gpus)
        recipe = self.rt.catalog.get(spec.spec.recipe.name)
        if recipe is None:
            raise LaunchFailure(f"recipe {spec.spec.recipe.name} is no longer in the served catalog")
        inputs = job_inputs(spec, resolved)
        hours = wall_hours(gpus=gpus, profile_hours=self.rt.settings.profile_max_hours.get(profile, 0.0), quota=quota)
        limits = Limits(wall_seconds=hours * 3600 if hours else None)  # what the job reserves of the daily budget
        return executor, prepare_run(
            self.rt, spec=spec, recipe=recipe, run_id=run_id, username=username, profile=profile,
            package_sha=package_sha, inputs=inputs, run_token=token, action=action, parent_id=parent_id,
            devices=series_gpus, job_paths=executor.job_paths, limits=limits, runtime=runtime)

    # phase 3 -------------------------------------------------------------------------------------------------
    def watch(self) -> int:
        """Poll running jobs, deliver stops and record final statuses; return how many ended."""
        with self.rt.db.write() as db:
            for job in db.scalars(select(Job).where(Job.status.in_(("submitted", "preparing")),
                                                    Job.stop_requested.is_(True), Job.executor_ref == "")):
                set_status(db, job, "stopped", reason=f"{job.stop_reason or 'stopped on request'} before it started")
        with self.rt.db.read() as db:
            running = [(j.id, j.executor_ref, j.stop_requested, j.status) for j in
                       db.scalars(select(Job).where(Job.status.in_(("submitted", "running")), Job.executor_ref != ""))]
        for job_id, ref, stop_requested, _status in running:
            if stop_requested and job_id not in self._signalled:
                self.engines.stop(ref, self.rt.settings.stop_grace_seconds)
                self._signalled.add(job_id)
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
                set_status(db, job, "running", reason=f"started on the {name} executor")
            elif state.state == "pending" and job.status == "submitted":
                set_status(db, job, "submitted", reason=_queued_reason(name, ref, state))

    def finish(self, job_id: str, state: ExecState) -> None:
        """Record the final status of a job whose process ended, revoke its run token, queue its follow-ups."""
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
            set_status(db, job, status, reason=reason)
            _revoke_run_tokens(db, job.id)
            if status == "succeeded" and not job.action:
                create_followups(db, parent=job, catalog=self.rt.catalog, settings=self.rt.settings)
        self._signalled.discard(job_id)

    def reconcile(self) -> None:
        """After a restart: re-attach live jobs and finish the ones that ended or vanished while we were away.

        Jobs left `preparing` are placed again (`submitted`): the next cycle builds their runtime again, or finds
        it built (the cache is on disk; an interrupted build is removed and started over).
        """
        with self.rt.db.write() as db:
            for job in db.scalars(select(Job).where(Job.status == "preparing", Job.executor_ref == "")):
                job.lease_owner, job.lease_token, job.lease_expires_at = "", "", None
                set_status(db, job, "submitted", reason="the console restarted while the job's runtime was built; "
                                                        "preparing it again")
        with self.rt.db.read() as db:
            refs = {j.executor_ref: j.id for j in db.scalars(select(Job).where(Job.status.in_(("submitted", "running"))))
                    if j.executor_ref}
            orphans = [j.id for j in db.scalars(select(Job).where(Job.status == "running", Job.executor_ref == ""))]
        for ref, state in self.engines.reconcile(list(refs)).items():
            if state.finished:
                self.finish(refs[ref], state)
        for job_id in orphans:
            self.finish(job_id, ExecState("lost", detail="the console restarted before the job was started"))

    def cycle(self, *, place: bool = True) -> None:
        """Run the three phases once (without `place`: only launch and watch)."""
        for phase in (self.place, self.launch, self.watch) if place else (self.launch, self.watch):
            start = time.perf_counter()
            count = phase()
            elapsed = (time.perf_counter() - start) * 1000
            if count:
                log.info("%s: %d job(s) in %.1f ms", phase.__name__, count, elapsed)


def _queued_reason(engine: str, ref: str, state: ExecState) -> str:
    """Return the reason of a job an engine has accepted and queues: the engine, its id, and why it waits."""
    why = f": {state.detail}" if state.detail else ""
    return f"queued by {engine} as {ref_parts(ref)[1]}{why}"


def _revoke_run_tokens(db: Any, job_id: str) -> None:
    for token in db.scalars(select(Token).where(Token.kind == "run", Token.run_id == job_id,
                                                Token.revoked_at.is_(None))):
        token.revoked_at = time.time()


class BackgroundLoop:
    """Run the scheduler on a thread: a whole cycle every `interval` seconds, and a cycle soon after the runtime is
    woken — at most one every MIN_GAP seconds, so a burst of submissions is launched in a few cycles rather than one
    cycle each, and placing waiting jobs (which reads the whole queue) only when capacity or the queue changed."""

    MIN_GAP = 0.02

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
        last_place = 0.0
        while not self._stopping.is_set():
            started = time.monotonic()
            self.rt.wakeup.clear()
            place = self.rt.place_due.is_set() or started - last_place >= self.interval
            if place:
                self.rt.place_due.clear()
                last_place = started
            try:
                self.scheduler.cycle(place=place)
            except Exception:  # a failed cycle must not stop the loop; the next cycle retries
                log.exception("scheduler cycle failed")
            if self.rt.wakeup.wait(max(0.0, self.interval - (time.monotonic() - last_place))):
                self._stopping.wait(max(0.0, started + self.MIN_GAP - time.monotonic()))  # let a burst gather

    def stop(self) -> None:
        """Stop after the current cycle (running jobs keep running; a restart re-attaches them)."""
        self._stopping.set()
        self.rt.wakeup.set()
        self._thread.join(timeout=10)
