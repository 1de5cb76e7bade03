"""Phase 2, launch: claim placed jobs, plan their runtime, prepare their run directory and start them on an engine.

Each claimed job is loaded once (`claim.ClaimedJob`) and that object goes through runtime planning, the build of a
missing runtime, preparation (`prepare.prepare_run`) and the engine's `submit`. On failure the placement is undone
(requeued with the reason: the engine is unavailable) or the job fails (it can never start as admitted). A job whose
recipe runtime is not built yet is `preparing`: its build runs on a worker thread of `Runtimes` (one build per
runtime, its output in the job's log) and a later cycle starts the job on it, or fails the job with the installer's
error; the scheduler thread never waits for a build.
"""

from __future__ import annotations

import logging
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from ...engines import Executor, ExecutorError, JobRefused, LaunchRequest, Limits
from ...engines.routing import Engines
from ...engines.runtimes import JobRuntime, RuntimeRecord, Runtimes, RuntimeSpec, job_kind
from ..services.accounts import credentials as accounts
from ..services.context import Runtime
from ..services.jobs import attempts
from ..services.jobs.rows import set_status
from ..services.logs.store import log_path
from ..services.quota import policy
from ..services.quota.caps import get_quota
from ..store.models import Job, JobAttempt
from .claim import ClaimedJob, Lease, claim, load
from .clock import Clock
from .errors import LaunchFailure
from .prepare import Attempt, prepare_run, run_dir_of
from .records import queued_reason, revoke_run_tokens

__all__ = ["REASON_CHARS", "Launcher", "build_failure"]

log = logging.getLogger("starforge.scheduler")
REASON_CHARS = 2000  # a failed build's reason: the installer's error lines, bounded


@dataclass(frozen=True)
class _Build:
    """A `preparing` job of this console: the build its runtime waits for."""

    job: ClaimedJob
    spec: RuntimeSpec
    future: Future[RuntimeRecord]


def build_failure(spec: RuntimeSpec, exc: BaseException) -> str:
    """Return a failed build's reason for its jobs: the runtime, then the installer's error, bounded."""
    text = f"the runtime {spec.label} could not be built: {exc}"
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


def _unexpected(exc: Exception) -> str:
    return f"the job could not be launched: {type(exc).__name__}: {exc}"


class Launcher:
    """Start placed jobs on the console's engines (the launch phase, and the builds it waits for)."""

    def __init__(self, rt: Runtime, engines: Engines, clock: Clock, owner: str, runtimes: Runtimes) -> None:
        self.rt = rt
        self.engines = engines
        self.clock = clock
        self.owner = owner
        self.runtimes = runtimes
        self.preparing: dict[str, _Build] = {}  # job id -> the build its runtime waits for (scheduler thread only)

    def launch(self) -> int:
        """Start the prepared jobs whose runtime is built, then every placed job this console could claim."""
        started = self._advance_preparing()
        for row in claim(self.rt, owner=self.owner, now=self.clock.now()):
            try:
                job = load(row, self.rt.submissions.handover)
            except Exception as exc:  # a stored spec that no longer parses: the job can never start
                log.exception("job %s could not be loaded", row.lease.job_id)
                self._finish_claim(row.lease, status="failed", reason=_unexpected(exc))
                continue
            started += self._launch(job)
        return started

    def _launch(self, job: ClaimedJob, built: RuntimeRecord | None = None) -> int:
        """Start one claimed job (on `built`, or on the runtime its plan names); return 1 when it started.

        A job whose runtime must be built first becomes `preparing` instead, and 0 is returned.
        """
        try:
            if built is None:
                spec = self._runtime_plan(job)
                built = self.runtimes.ready(spec) if spec is not None else None
                if spec is not None and built is None:
                    self._start_build(job, spec)
                    return 0
            runtime = self.runtimes.job_runtime(built) if built is not None else None
            executor, request, resume = self._prepare(job, runtime)
            ref = executor.submit(request)
            state = executor.poll(ref)
        except (LaunchFailure, JobRefused) as exc:
            self._finish_claim(job.lease, status="failed", reason=str(exc))
            return 0
        except ExecutorError as exc:
            self._finish_claim(job.lease, status="queued", reason=f"executor unavailable: {exc}; requeued",
                               waiting_for="capacity")
            return 0
        except Exception as exc:  # never leave a claimed job `submitted` forever: it fails with the cause
            log.exception("job %s could not be launched", job.id)
            self._finish_claim(job.lease, status="failed", reason=_unexpected(exc))
            return 0
        with self.rt.db.write() as db:
            row = db.get(Job, job.id)
            if row is None or row.lease_token != job.lease.token or row.status not in ("submitted", "preparing"):
                executor.stop(ref, 0)  # someone else owns it now (or it was stopped): never run twice
                return 0
            row.executor_ref = ref
            row.run_dir = str(request.run_dir)
            row.lease_owner, row.lease_token, row.lease_expires_at = "", "", None
            on = f" on runtime {runtime.label}" if runtime is not None else ""
            now = self.clock.now()
            number = attempts.begin_attempt(db, row, resume=resume, now=now)
            if number > 1:
                on += f" (attempt {number}, {_resumed(resume)})"
            if state.state == "pending":
                set_status(db, row, "submitted", reason=queued_reason(executor.name, ref, state), at=now)
            else:
                set_status(db, row, "running", reason=f"started on the {executor.name} executor{on}", at=now)
        return 1

    def _runtime_plan(self, job: ClaimedJob) -> RuntimeSpec | None:
        """Return the runtime a claimed job needs built (None: it runs on the console's interpreter)."""
        recipe = self.rt.catalog.get(job.spec.spec.recipe.name)
        if recipe is None:
            raise LaunchFailure(f"recipe {job.spec.spec.recipe.name} is no longer in the served catalog")
        version = job.spec.spec.framework.version or recipe.runtime.default_version
        kind = job_kind(list(job.series_gpus), self.rt.settings.runtimes)
        plan: RuntimeSpec | None = self.runtimes.plan(recipe, version, kind).spec
        return plan

    def _start_build(self, job: ClaimedJob, spec: RuntimeSpec) -> None:
        """Make a claimed job `preparing` and build (or join the build of) its runtime on a worker thread."""
        with self.rt.db.write() as db:
            row = db.get(Job, job.id)
            if row is None or row.lease_token != job.lease.token or row.status != "submitted":
                return
            run_dir = run_dir_of(self.rt.settings.state_dir, job.username, job.exp, job.id)  # what prepare lays out
            log_file = log_path(run_dir)
            log_file.parent.mkdir(parents=True, exist_ok=True)  # the build writes into the job's log from now on
            row.run_dir = str(run_dir)  # `sf job logs` shows the build while the job prepares
            set_status(db, row, "preparing", reason=f"building runtime {spec.label}", at=self.clock.now())
        future = self.runtimes.prepare(spec, log_file)
        self.preparing[job.id] = _Build(job, spec, future)
        future.add_done_callback(lambda _done: self.rt.wake())
        log.info("job %s: preparing runtime %s", job.id, spec.label)

    def _advance_preparing(self) -> int:
        """Start the preparing jobs whose build finished, fail those whose build failed; return how many started."""
        if not self.preparing:
            return 0
        with self.rt.db.read() as db:
            rows = db.execute(select(Job.id, Job.status, Job.lease_token)
                              .where(Job.id.in_(list(self.preparing)))).all()
        current = {job_id: (status, token) for job_id, status, token in rows}
        started = 0
        for job_id, build in list(self.preparing.items()):
            if current.get(job_id) != ("preparing", build.job.lease.token):
                del self.preparing[job_id]  # stopped while preparing (the build goes on for others and the cache)
                continue
            if not build.future.done():
                continue
            del self.preparing[job_id]
            try:
                record = build.future.result()
            except CancelledError:  # the console is stopping: the next one builds again (see `reconcile`)
                continue
            except Exception as exc:
                self._finish_claim(build.job.lease, status="failed", reason=build_failure(build.spec, exc))
                continue
            started += self._launch(build.job, record)
        return started

    def _finish_claim(self, lease: Lease, *, status: str, reason: str, waiting_for: str = "") -> None:
        now = self.clock.now()
        with self.rt.db.write() as db:
            job = db.get(Job, lease.job_id)
            if job is None or job.lease_token != lease.token:
                return
            job.lease_owner, job.lease_token, job.lease_expires_at = "", "", None
            set_status(db, job, status, reason=reason, waiting_for=waiting_for, at=now)
            if status == "failed":
                revoke_run_tokens(db, job.id, now=now)
        log.warning("job %s: %s", lease.job_id, reason)

    def _prepare(self, job: ClaimedJob, runtime: JobRuntime | None
                 ) -> tuple[Executor, LaunchRequest, attempts.ResumePoint | None]:
        with self.rt.db.write() as db:
            row = db.get(Job, job.id)
            if row is None:
                raise LaunchFailure("the job was deleted before it started")
            user = accounts.UserView(job.user_id, job.username, "", "", False)
            token = accounts.issue_run_token(db, user, job.id)
            quota = get_quota(db, user, self.rt.settings.quota)
            resume = None
            if row.attempts:  # a later attempt: it resumes, and reports again what came after its checkpoint
                resume = attempts.resume_point(db, job.id, row.run_dir)
                attempts.drop_replayed(db, job.id, resume)
            attempt = Attempt(row.attempts + 1, resume, _ended_reason(db, job.id, row.attempts))
        executor = self.engines.for_series(dict(job.series_gpus))
        recipe = self.rt.catalog.get(job.spec.spec.recipe.name)
        if recipe is None:
            raise LaunchFailure(f"recipe {job.spec.spec.recipe.name} is no longer in the served catalog")
        limits = Limits(wall_seconds=policy.wall_seconds(gpus=job.gpus, profile=job.profile, quota=quota,
                                                         profile_max_hours=self.rt.settings.profile_max_hours))
        return executor, prepare_run(self.rt, job, recipe=recipe, run_token=token, job_paths=executor.job_paths,
                                     limits=limits, runtime=runtime, attempt=attempt), resume


def _resumed(resume: attempts.ResumePoint | None) -> str:
    """Return how an attempt starts: from which checkpoint, or over."""
    if resume is None:
        return "from the start: no checkpoint was registered"
    return f"resumed from {resume.path.name}" + (f" (step {resume.step})" if resume.step is not None else "")


def _ended_reason(db: Session, job_id: str, number: int) -> str:
    """Return how attempt `number` of the job ended ("" for none)."""
    ended = db.scalar(select(JobAttempt).where(JobAttempt.job_id == job_id, JobAttempt.number == number))
    return f"{ended.outcome}: {ended.reason}" if ended is not None and ended.outcome else ""
