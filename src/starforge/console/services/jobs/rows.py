"""The doors of a job row: `build_job` makes it and `create_job` adds it (the submission writer inserts a batch of
built rows itself), `set_status` (`status_event` for a batch) is the one way its status changes (writing the account's webhook
deliveries with it: `notify.outbox`), and `stop_job` the one way a stop is requested.

Tier: query (runs over the caller's session, in the caller's transaction; never begins or commits one). Submissions
and follow-ups both make their rows with `build_job`; the scheduler, stops and account changes move them through
`set_status`.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.orm import Session

from ....contract import JobSpec, dumps
from ...store.models import Job, JobEvent
from ..notify.outbox import enqueue as enqueue_notifications

__all__ = [
    "ACTIVE",
    "QUEUE_ORDER",
    "STATUSES",
    "TERMINAL",
    "WAITING",
    "InvalidTransition",
    "HELD",
    "INTERRUPTS",
    "build_job",
    "create_job",
    "clear_interrupt",
    "interrupt_job",
    "start_again",
    "new_run_id",
    "series_demand",
    "set_status",
    "status_event",
    "stop_job",
]

WAITING = ("queued", "pending")
# placed jobs hold their quota and capacity: `preparing` is a placed job whose runtime is being built
ACTIVE = ("submitted", "preparing", "running")
TERMINAL = ("succeeded", "failed", "stopped")
# a paused job keeps its place in the queue but is not placed until `sf job resume` (it holds no capacity)
HELD = ("paused",)
# what a running job may be asked to do (checkpoint, then stop): `preempt` requeues it, `pause` holds it
INTERRUPTS = ("preempt", "pause")
# the order the scheduler serves waiting jobs in: higher priority first, then first come, first served
QUEUE_ORDER = (Job.priority.desc(), Job.submitted_at, Job.id)
STATUSES = (*WAITING, *HELD, *ACTIVE, *TERMINAL)  # every status a job row can hold (clients show unknown ones as-is)
_TRANSITIONS = {
    "": {"queued", "pending", "submitted"},
    "queued": {"submitted", "pending", "stopped", "failed", "queued", "paused"},
    "pending": {"queued", "submitted", "stopped", "failed", "pending", "paused"},
    # submitted again: a cluster engine queues the job, and its waiting reason changed; queued: requeued (an engine
    # was unavailable, or a preempted or restarted attempt ended before it ran)
    "submitted": {"preparing", "running", "failed", "stopped", "queued", "succeeded", "submitted", "paused"},
    # back to submitted: the console restarted during the build, which starts again
    "preparing": {"running", "failed", "stopped", "queued", "submitted", "preparing", "paused"},
    # running again: the reason changed (asked to checkpoint); queued: preempted or restarted, as the same job
    "running": {"succeeded", "failed", "stopped", "queued", "paused", "running"},
    "paused": {"queued", "stopped", "paused"},
    # queued again: `sf job retry` (the same job, from its latest checkpoint)
    "failed": {"queued"},
    "stopped": {"queued"},
}
_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


class InvalidTransition(RuntimeError):
    """Raised on a status change the state machine forbids (a bug, never user input)."""


def new_run_id() -> str:
    """Return a fresh opaque run id: `r-` and 10 base-36 characters."""
    number = secrets.randbelow(36**10)  # one draw from the system's generator, not one per character
    digits = []
    for _ in range(10):
        number, digit = divmod(number, 36)
        digits.append(_ALPHABET[digit])
    return "r-" + "".join(digits)


def series_demand(spec: JobSpec, profile: str) -> dict[str, int]:
    """Return the accelerators the spec asks for per series (a pool without a series takes the job's profile)."""
    out: dict[str, int] = {}
    for pool in spec.spec.resources.pools:
        series = pool.series or profile
        out[series] = out.get(series, 0) + pool.gpus
    return out


def create_job(db: Session, job: Job) -> Job:
    """Add a job row made by `build_job`, under a run id no other job has (drawing a new one while it is taken); the
    caller gives it its first status through `set_status` in the same transaction."""
    while db.get(Job, job.id) is not None:
        job.id = new_run_id()
    db.add(job)
    return job


def build_job(
    *,
    user_id: int,
    username: str,
    spec: JobSpec,
    exp: str,
    profile: str,
    priority: int,
    meta: Mapping[str, Any],
    resolved: Mapping[str, Any],
    package_sha: str,
    warnings: Sequence[str] = (),
    parent_id: str = "",
    action: str = "",
    sweep_id: str = "",
) -> Job:
    """Return the row of an admitted job under a fresh run id, not yet added to any session (`create_job` adds it;
    the submission writer inserts a batch of them at once, and draws a new id if a commit fails).

    `spec` is the admitted (owner-stamped) JobSpec, stored once, in `jobs.spec_json`, in the contract's canonical
    JSON (`starforge.contract.dumps`, compact: the contract is its one writer); `resolved` holds what
    admission resolved for the launch (init_from path, data and plugin directories); `sweep_id` the sweep it
    belongs to ("" for none).
    """
    return Job(
        id=new_run_id(), user_id=user_id, username=username, name=spec.metadata.name, exp=exp,
        project=spec.metadata.project, profile=profile, recipe=spec.spec.recipe.name, status="",
        requested_gpus=spec.total_gpus, series_gpus=json.dumps(series_demand(spec, profile)), priority=priority,
        spec_json=dumps(spec, indent=None),
        meta_json=json.dumps(dict(meta), ensure_ascii=False, default=str), warnings_json=json.dumps(list(warnings)),
        package_sha=package_sha, resolved_json=json.dumps(dict(resolved)), parent_id=parent_id, action=action,
        submitted_at=time.time(), sweep_id=sweep_id, max_restarts=_restarts(meta),
    )


def _restarts(meta: Mapping[str, Any]) -> int:
    """Return the automatic restarts a submission asked for (`max_restarts`, checked at admission; 0 by default)."""
    asked = meta.get("max_restarts", 0)
    return asked if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0 else 0


def set_status(db: Session, job: Job, status: str, *, reason: str = "", waiting_for: str = "",
               at: float | None = None) -> bool:
    """Move `job` to `status`, recording the event with its time (`at`, now when None) and cause; False when it is
    already there."""
    event = status_event(job, status, reason=reason, waiting_for=waiting_for, at=at)
    if event is None:
        return False
    db.add(event)
    enqueue_notifications(db, job, event)  # the account's webhooks, in this same transaction (the outbox)
    return True


def status_event(job: Job, status: str, *, reason: str = "", waiting_for: str = "",
                 at: float | None = None) -> JobEvent | None:
    """Move `job` to `status` at `at` (now when None: the scheduler passes its clock's time) and return the event
    that records it (for the caller to store), or None when it is already there; raise InvalidTransition on a change
    the state machine forbids."""
    current = job.status or ""
    if current == status and reason == job.reason:
        return None
    if status not in _TRANSITIONS.get(current, set()):
        raise InvalidTransition(f"job {job.id}: {current or 'new'} -> {status} is not allowed")
    now = time.time() if at is None else at
    job.status = status
    job.reason = reason
    job.waiting_for = waiting_for if status in WAITING else ""
    if status == "running" and job.started_at is None:
        job.started_at = now
    if status in TERMINAL:
        job.finished_at = now
        if job.started_at is None and status != "stopped":
            job.started_at = now
    elif current in TERMINAL:  # retried: it is unfinished again
        job.finished_at = None
        job.exit_code = None
    return JobEvent(job_id=job.id, at=now, from_status=current, to_status=status, reason=reason)


def interrupt_job(db: Session, job: Job, kind: str, *, by: str, reason: str, at: float) -> None:
    """Ask the running job `job` to checkpoint, then stop (`kind`: preempt | pause), recording the request as an
    event with `reason`; its `forge-launch` learns it on its next control call, its engine stops it after the
    grace period (the watch phase)."""
    if kind not in INTERRUPTS:
        raise ValueError(f"unknown interrupt {kind!r}")
    job.interrupt, job.interrupt_at, job.interrupt_by = kind, at, by[:255]
    set_status(db, job, job.status, reason=reason, at=at)


def clear_interrupt(job: Job) -> None:
    """Forget a checkpoint-and-stop asked of `job` (it was cancelled, or its attempt ended)."""
    job.interrupt, job.interrupt_at, job.interrupt_by = "", None, ""


def start_again(db: Session, job: Job, status: str, *, reason: str, waiting_for: str = "",
                at: float | None = None) -> None:
    """Put a job whose attempt ended back in the queue (`queued`) or hold it (`paused`), as the same job: no engine
    ref, no lease, no stop or interrupt asked; its next attempt resumes from its latest checkpoint."""
    job.executor_ref = ""
    job.stop_requested, job.stop_reason = False, ""
    clear_interrupt(job)
    job.lease_owner, job.lease_token, job.lease_expires_at = "", "", None
    set_status(db, job, status, reason=reason, waiting_for=waiting_for, at=at)


def stop_job(db: Session, job: Job, reason: str) -> bool:
    """Stop one job with `reason` (waiting: at once; placed or running: by the executor); False if it had ended."""
    if job.status in TERMINAL:
        return False
    if job.status in WAITING or job.status in HELD:
        set_status(db, job, "stopped", reason=f"{reason} before it started" if not job.attempts else reason)
    else:
        job.stop_requested = True
        job.stop_reason = reason[:2000]
    return True
