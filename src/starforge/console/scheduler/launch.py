"""Phase 2, launch: claim placed jobs, pull their image, plan their runtime, prepare their run directory and start
them on an engine.

Each claimed job is loaded once (`claim.ClaimedJob`) and that object goes through the pull of its image, runtime
planning, the build of a missing runtime, preparation (`prepare.prepare_run`) and the engine's `submit`. On failure
the placement is undone (requeued with the reason: the engine is unavailable) or the job fails (it can never start as
admitted). A job whose image is not in the image cache, or whose recipe runtime is not built yet, is `preparing`: the
pull runs on a worker thread of `Images`, the build on one of `Runtimes` (one per image digest or runtime, its output
in every waiting job's log), and a later cycle goes on with the job, or fails it with the registry's or the
installer's error; the scheduler thread never waits for either. The digest a job's image resolved to is kept on the
job: its later attempts run on that digest whatever its tag names by then.
"""

from __future__ import annotations

import logging
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ...engines import ExecState, Executor, ExecutorError, JobRefused, LaunchRequest, Limits
from ...engines.images import Images, UnpackedImage
from ...engines.routing import Engines
from ...engines.runtimes import JobRuntime, RuntimeRecord, Runtimes, RuntimeSpec, job_kind
from ..services.accounts import credentials as accounts
from ..services.context import Runtime
from ..services.jobs import attempts
from ..services.jobs.rows import set_status
from ..services.leadership import LostLead
from ..services.logs.store import log_path
from ..services.quota import policy
from ..services.quota.caps import get_quota
from ..services.serving.lifecycle import ACTION as SERVE
from ..services.serving.ttl import service_wall_seconds
from ..store.models import Job, JobAttempt
from .claim import ClaimedJob, Lease, claim, load
from .clock import Clock
from .errors import LaunchFailure
from .prepare import Attempt, prepare_run, run_dir_of
from .records import queued_reason, revoke_run_tokens

__all__ = ["REASON_CHARS", "Launcher", "build_failure", "pull_failure"]

log = logging.getLogger("starforge.scheduler")
REASON_CHARS = 2000  # a failed build's reason: the installer's error lines, bounded


@dataclass(frozen=True)
class _Build:
    """A `preparing` job of this console: the pull of its image or the build of its runtime it waits for."""

    job: ClaimedJob
    future: Future[Any]
    spec: RuntimeSpec | None = None  # a runtime build (None: an image pull)
    image: UnpackedImage | None = None  # the job's image, already pulled, while its runtime builds


def _bounded(text: str) -> str:
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


def build_failure(spec: RuntimeSpec, exc: BaseException) -> str:
    """Return a failed build's reason for its jobs: the runtime, then the installer's error, bounded."""
    return _bounded(f"the runtime {spec.label} could not be built: {exc}")


def pull_failure(reference: str, exc: BaseException) -> str:
    """Return a failed pull's reason for its jobs: the image, then the registry's own words, bounded."""
    return _bounded(f"the image {reference} could not be pulled: {exc}")


def _unexpected(exc: Exception) -> str:
    return f"the job could not be launched: {type(exc).__name__}: {exc}"


class Launcher:
    """Start placed jobs on the console's engines (the launch phase, and the builds it waits for)."""

    def __init__(self, rt: Runtime, engines: Engines, clock: Clock, owner: str, runtimes: Runtimes,
                 images: Images, *, epoch: int = 0) -> None:
        self.rt = rt
        self.epoch = epoch  # the leader's fencing token, recorded on each attempt started
        self.engines = engines
        self.clock = clock
        self.owner = owner
        self.runtimes = runtimes
        self.images = images
        self.preparing: dict[str, _Build] = {}  # job id -> the pull or build it waits for (scheduler thread only)

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

    def _launch(self, job: ClaimedJob, built: RuntimeRecord | None = None, image: UnpackedImage | None = None) -> int:
        """Start one claimed job (in `image`, on `built`, or as its spec names them); return 1 when it started.

        A job whose image must be pulled or whose runtime must be built first becomes `preparing` instead, and 0 is
        returned.
        """
        try:
            reference = job.spec.spec.framework.image if self.images.settings.run else ""
            if reference and image is None:
                digest = self._stored_digest(job.id)
                image = self.images.ready(reference, digest)
                if image is None:
                    self._start_pull(job, reference, digest)
                    return 0
            if built is None:
                spec = self._runtime_plan(job)
                built = self.runtimes.ready(spec) if spec is not None else None
                if spec is not None and built is None:
                    self._start_build(job, spec, image)
                    return 0
            runtime = self.runtimes.job_runtime(built) if built is not None else None
            executor, request, resume = self._prepare(job, runtime, image)
            ref = executor.submit(request)
            state = executor.poll(ref)
        except (LaunchFailure, JobRefused) as exc:
            self._finish_claim(job.lease, status="failed", reason=str(exc))
            return 0
        except LostLead:  # this process no longer leads: the job is the new leader's to start
            raise
        except ExecutorError as exc:
            self._finish_claim(job.lease, status="queued", reason=f"executor unavailable: {exc}; requeued",
                               waiting_for="capacity")
            return 0
        except Exception as exc:  # never leave a claimed job `submitted` forever: it fails with the cause
            log.exception("job %s could not be launched", job.id)
            self._finish_claim(job.lease, status="failed", reason=_unexpected(exc))
            return 0
        try:
            return 1 if self._record_start(job, executor, ref, state, request.run_dir, runtime, image, resume) else 0
        except LostLead:  # another process leads now: what this one started must not run beside its launch
            executor.stop(ref, 0)
            raise

    def _record_start(self, job: ClaimedJob, executor: Executor, ref: str, state: ExecState, run_dir: Path,
                      runtime: JobRuntime | None, image: UnpackedImage | None,
                      resume: attempts.ResumePoint | None) -> bool:
        """Record that `job` started as `ref` (its attempt, with this leader's epoch); return False, having stopped
        it, when the job is no longer this console's to start."""
        with self.rt.db.write() as db:
            row = db.get(Job, job.id)
            if row is None or row.lease_token != job.lease.token or row.status not in ("submitted", "preparing"):
                executor.stop(ref, 0)  # someone else owns it now (or it was stopped): never run twice
                return False
            row.executor_ref = ref
            row.run_dir = str(run_dir)
            row.lease_owner, row.lease_token, row.lease_expires_at = "", "", None
            on = f" on runtime {runtime.label}" if runtime is not None else ""
            if image is not None:
                row.image_digest = image.digest
                on += f" in image {image.reference} ({image.digest[:19]})"
            now = self.clock.now()
            number = attempts.begin_attempt(db, row, resume=resume, now=now, epoch=self.epoch)
            if number > 1:
                on += f" (attempt {number}, {_resumed(resume)})"
            if state.state == "pending":
                set_status(db, row, "submitted", reason=queued_reason(executor.name, ref, state), at=now)
            else:
                set_status(db, row, "running", reason=f"started on the {executor.name} executor{on}", at=now)
        return True

    def _runtime_plan(self, job: ClaimedJob) -> RuntimeSpec | None:
        """Return the runtime a claimed job needs built (None: it runs on the console's interpreter)."""
        recipe = self.rt.catalog.get(job.spec.spec.recipe.name)
        if recipe is None:
            raise LaunchFailure(f"recipe {job.spec.spec.recipe.name} is no longer in the served catalog")
        version = job.spec.spec.framework.version or recipe.runtime.default_version
        kind = job_kind(list(job.series_gpus), self.rt.settings.runtimes)
        plan: RuntimeSpec | None = self.runtimes.plan(recipe, version, kind).spec
        return plan

    def _stored_digest(self, job_id: str) -> str:
        """Return the image digest a job already ran on ("" before its first pull)."""
        with self.rt.db.read() as db:
            return db.scalar(select(Job.image_digest).where(Job.id == job_id)) or ""

    def _wait_for(self, job: ClaimedJob, reason: str) -> Path | None:
        """Make a claimed job `preparing` with `reason` and return its log file (None: it is no longer ours)."""
        with self.rt.db.write() as db:
            row = db.get(Job, job.id)
            if row is None or row.lease_token != job.lease.token or row.status not in ("submitted", "preparing"):
                return None
            run_dir = run_dir_of(self.rt.settings.state_dir, job.username, job.exp, job.id)  # what prepare lays out
            log_file = log_path(run_dir)
            log_file.parent.mkdir(parents=True, exist_ok=True)  # the pull or build writes into the job's log
            row.run_dir = str(run_dir)  # `sf job logs` shows it while the job prepares
            set_status(db, row, "preparing", reason=reason, at=self.clock.now())
        return log_file

    def _start_pull(self, job: ClaimedJob, reference: str, digest: str) -> None:
        """Make a claimed job `preparing` and pull (or join the pull of) its image on a worker thread."""
        log_file = self._wait_for(job, f"pulling image {reference}")
        if log_file is None:
            return
        future = self.images.prepare(reference, log_file, digest)
        self.preparing[job.id] = _Build(job, future)
        future.add_done_callback(lambda _done: self.rt.wake())
        log.info("job %s: pulling image %s", job.id, reference)

    def _start_build(self, job: ClaimedJob, spec: RuntimeSpec, image: UnpackedImage | None) -> None:
        """Make a claimed job `preparing` and build (or join the build of) its runtime on a worker thread."""
        log_file = self._wait_for(job, f"building runtime {spec.label}")
        if log_file is None:
            return
        future = self.runtimes.prepare(spec, log_file)
        self.preparing[job.id] = _Build(job, future, spec, image)
        future.add_done_callback(lambda _done: self.rt.wake())
        log.info("job %s: preparing runtime %s", job.id, spec.label)

    def _advance_preparing(self) -> int:
        """Go on with the preparing jobs whose pull or build finished, fail those whose pull or build failed; return
        how many started."""
        if not self.preparing:
            return 0
        with self.rt.db.read() as db:
            rows = db.execute(select(Job.id, Job.status, Job.lease_token)
                              .where(Job.id.in_(list(self.preparing)))).all()
        current = {job_id: (status, token) for job_id, status, token in rows}
        started = 0
        for job_id, build in list(self.preparing.items()):
            if current.get(job_id) != ("preparing", build.job.lease.token):
                del self.preparing[job_id]  # stopped while preparing (the work goes on for others and the cache)
                continue
            if not build.future.done():
                continue
            del self.preparing[job_id]
            try:
                result = build.future.result()
            except CancelledError:  # the console is stopping: the next one prepares again (see `reconcile`)
                continue
            except Exception as exc:
                reason = (build_failure(build.spec, exc) if build.spec is not None
                          else pull_failure(build.job.spec.spec.framework.image, exc))
                self._finish_claim(build.job.lease, status="failed", reason=reason)
                continue
            if build.spec is None:
                started += self._launch(build.job, image=result)
            else:
                started += self._launch(build.job, result, build.image)
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

    def _prepare(self, job: ClaimedJob, runtime: JobRuntime | None, image: UnpackedImage | None = None
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
        wall = policy.wall_seconds(gpus=job.gpus, profile=job.profile, quota=quota,
                                   profile_max_hours=self.rt.settings.profile_max_hours)
        if job.action == SERVE:
            wall = service_wall_seconds(wall, self.rt.settings.serving)
        limits = Limits(wall_seconds=wall)
        return executor, prepare_run(self.rt, job, recipe=recipe, run_token=token, job_paths=executor.job_paths,
                                     limits=limits, runtime=runtime, attempt=attempt, image=image), resume


def _resumed(resume: attempts.ResumePoint | None) -> str:
    """Return how an attempt starts: from which checkpoint, or over."""
    if resume is None:
        return "from the start: no checkpoint was registered"
    return f"resumed from {resume.path.name}" + (f" (step {resume.step})" if resume.step is not None else "")


def _ended_reason(db: Session, job_id: str, number: int) -> str:
    """Return how attempt `number` of the job ended ("" for none)."""
    ended = db.scalar(select(JobAttempt).where(JobAttempt.job_id == job_id, JobAttempt.number == number))
    return f"{ended.outcome}: {ended.reason}" if ended is not None and ended.outcome else ""
