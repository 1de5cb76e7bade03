"""Capacity and quota decisions on a snapshot: `take_snapshot` reads, `decide` is pure, `assume` books a placement,
and `place` is the one placement step (decide, then book the verdict) of the submission writer and the scheduler.

Order of the checks in `decide` (the first that fails names the reason the job waits):
1. every series the job needs has capacity in this deployment, enough for the whole job (`unplaceable`; else
   `pending`: it cannot start here until an operator adds some);
2. a sweep with a parallel limit (`sf sweep --max-parallel K`) has fewer than K of its jobs placed;
3. the account's concurrent GPUs, then concurrent jobs, stay within its quota (`policy.gpus_wait`,
   `policy.jobs_wait`);
4. no job of the same or higher priority is already waiting for capacity on one of the job's series (FIFO; with
   a `positional` snapshot, no earlier job at all: the scheduler's fair order is not a priority order);
5. every series has enough free slots for all of the job's pools at once (all pools or none).

Tier: query (`take_snapshot` runs over the caller's session, inside the capacity lock the caller holds; the rest is
pure; never begins or commits a transaction).
"""

from __future__ import annotations

import enum
import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from ...store.models import Job
from .caps import ACTIVE
from .policy import Wait, gpus_wait, jobs_wait

__all__ = [
    "QUOTA_FITS", "Demand", "Fit", "JobShape", "Snapshot", "assume", "block", "decide", "demand_of", "held_by",
    "place", "take_snapshot", "unplaceable",
]


class Fit(enum.Enum):
    """Why a job can or cannot take capacity now."""

    FITS = "fits"
    NO_CAPACITY = "no_capacity"
    QUOTA_GPUS = "quota_gpus"
    QUOTA_JOBS = "quota_jobs"
    QUOTA_HOURS = "quota_hours"  # the daily GPU-hour budget (decided by `policy.budget_wait`, not by `decide`)
    SWEEP_LIMIT = "sweep_limit"
    BEHIND_QUEUE = "behind_queue"
    CAPACITY_BUSY = "capacity_busy"

    @property
    def waiting_for(self) -> str:
        """Return what a job that got this verdict waits for (stored on the row)."""
        return _WAITING_FOR[self]

    @property
    def status(self) -> str:
        """Return the job status for this verdict: submitted, pending (never here) or queued."""
        return _STATUS[self]


_WAITING_FOR = {Fit.FITS: "", Fit.NO_CAPACITY: "series", Fit.QUOTA_GPUS: "quota", Fit.QUOTA_JOBS: "quota",
                Fit.QUOTA_HOURS: "budget",
                Fit.SWEEP_LIMIT: "sweep",
                Fit.BEHIND_QUEUE: "capacity", Fit.CAPACITY_BUSY: "capacity"}
_STATUS = {fit: "submitted" if fit is Fit.FITS else "pending" if fit is Fit.NO_CAPACITY else "queued" for fit in Fit}
# The verdict of each cap that holds a job in the queue (`policy.Wait.cap`)
QUOTA_FITS = {"max_concurrent_gpus": Fit.QUOTA_GPUS, "max_concurrent_jobs": Fit.QUOTA_JOBS,
              "daily_gpu_hours": Fit.QUOTA_HOURS}


def held_by(wait: Wait) -> tuple[Fit, str]:
    """Return the verdict and reason of a job the quota policy holds in the queue (`policy.*_wait`)."""
    return QUOTA_FITS[wait.cap], wait.reason


@dataclass(frozen=True)
class Demand:
    """What one job asks for: accelerators per series, its account's caps, its priority, and its sweep with that
    sweep's parallel limit (0: none)."""

    job_id: str
    user_id: int
    gpus: int
    series_gpus: dict[str, int]
    priority: int
    max_gpus: int
    max_jobs: int
    sweep_id: str = ""
    sweep_max: int = 0


@dataclass
class Snapshot:
    """A consistent copy of capacity and usage that decisions mutate instead of the store."""

    capacity: dict[str, int]
    used: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    user_gpus: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    user_jobs: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    waiting: dict[str, int] = field(default_factory=dict)  # series -> highest priority waiting for capacity
    sweep_jobs: dict[tuple[int, str], int] = field(default_factory=lambda: defaultdict(int))  # sweep -> placed jobs
    # True: decisions come in an order that is not by priority (fair share), so a job waiting for capacity holds
    # back every later job on its series, whatever their priority
    positional: bool = False


class JobShape(Protocol):
    """The columns of a job row a demand is made of: a `Job`, or a row selected with these columns."""

    @property
    def id(self) -> str: ...
    @property
    def user_id(self) -> int: ...
    @property
    def requested_gpus(self) -> int: ...
    @property
    def series_gpus(self) -> str: ...
    @property
    def priority(self) -> int: ...
    @property
    def sweep_id(self) -> str | None: ...


def demand_of(job: JobShape, max_gpus: int, max_jobs: int, sweep_max: int = 0, *,
              shapes: dict[str, dict[str, int]] | None = None) -> Demand:
    """Return the demand of a job row (`sweep_max`: the parallel limit of its sweep, 0 for none).

    `shapes` is a decoding cache of `series_gpus` the caller keeps for one pass over many rows (the same few shapes
    repeat across thousands of waiting jobs); the decoded mappings are shared, never changed."""
    text = job.series_gpus or "{}"
    if shapes is None:
        series = json.loads(text)
    elif (series := shapes.get(text)) is None:
        series = shapes[text] = json.loads(text)
    return Demand(job.id, job.user_id, job.requested_gpus, series, job.priority, max_gpus, max_jobs,
                  job.sweep_id or "", sweep_max)


# Core statements, built once: a snapshot is read on every submission batch and scheduler cycle
_ACTIVE_USAGE = select(Job.user_id, Job.requested_gpus, Job.series_gpus, Job.sweep_id).where(Job.status.in_(ACTIVE))
_WAITING_FOR_CAPACITY = select(Job.series_gpus, Job.priority).where(Job.status == "queued",
                                                                   Job.waiting_for == "capacity")


def take_snapshot(db: Session, capacity: Mapping[str, int]) -> Snapshot:
    """Read current usage from the active job rows (call inside the capacity lock to decide and commit)."""
    snap = Snapshot(capacity=dict(capacity))
    connection = db.connection()  # plain rows: no ORM bookkeeping for two reads of a few columns
    for user_id, gpus, series_json, sweep_id in connection.execute(_ACTIVE_USAGE):
        snap.user_gpus[user_id] += gpus
        snap.user_jobs[user_id] += 1
        if sweep_id:
            snap.sweep_jobs[(user_id, sweep_id)] += 1
        for series, count in json.loads(series_json or "{}").items():
            snap.used[series] += count
    for series_json, priority in connection.execute(_WAITING_FOR_CAPACITY):
        for series in json.loads(series_json or "{}"):
            snap.waiting[series] = max(snap.waiting.get(series, -(2**31)), priority)
    return snap


def unplaceable(capacity: Mapping[str, int], series_gpus: Mapping[str, int]) -> dict[str, str]:
    """Return, for each series of `series_gpus` this deployment can never serve (no slot at all, or fewer slots in
    total than the job needs at once), why; empty when every series could serve the job once its slots free.

    One notion of "no capacity": `decide` waits on it (`Fit.NO_CAPACITY`, status `pending`) and admission refuses it
    (`admission.checks.placeable`)."""
    out: dict[str, str] = {}
    for series, count in series_gpus.items():
        total = capacity.get(series, 0)
        if total <= 0:
            out[series] = f"no {series} capacity in this deployment"
        elif count > total:
            out[series] = f"this job needs {count} {series} slots but the deployment has {total}"
    return out


def decide(snap: Snapshot, demand: Demand) -> tuple[Fit, str]:
    """Return whether `demand` can take capacity now, with the reason shown to the user when it cannot."""
    blocked = unplaceable(snap.capacity, demand.series_gpus)
    if blocked:
        series, why = next(iter(blocked.items()))
        return Fit.NO_CAPACITY, f"{why}: the job waits until an operator adds {series} capacity"
    placed = snap.sweep_jobs.get((demand.user_id, demand.sweep_id), 0) if demand.sweep_id else 0
    if demand.sweep_max and placed >= demand.sweep_max:
        return Fit.SWEEP_LIMIT, (
            f"sweep {demand.sweep_id} runs at most {demand.sweep_max} at a time; it starts when one of its "
            f"{placed} active runs ends"
        )
    held = (gpus_wait(gpus=demand.gpus, active_gpus=snap.user_gpus.get(demand.user_id, 0), cap=demand.max_gpus)
            or jobs_wait(active_jobs=snap.user_jobs.get(demand.user_id, 0), cap=demand.max_jobs))
    if held is not None:
        return held_by(held)
    for series in demand.series_gpus:
        if snap.waiting.get(series, -(2**31)) >= demand.priority:
            return Fit.BEHIND_QUEUE, f"waiting behind earlier jobs for {series} capacity"
    for series, count in demand.series_gpus.items():
        free = snap.capacity.get(series, 0) - snap.used.get(series, 0)
        if count > free:
            total = snap.capacity.get(series, 0)
            return Fit.CAPACITY_BUSY, f"capacity: {total - free} of {total} {series} slots busy; it starts when one frees"
    return Fit.FITS, ""


def assume(snap: Snapshot, demand: Demand) -> None:
    """Book `demand` in the snapshot so the next decision of the same cycle already counts it."""
    snap.user_gpus[demand.user_id] = snap.user_gpus.get(demand.user_id, 0) + demand.gpus
    snap.user_jobs[demand.user_id] = snap.user_jobs.get(demand.user_id, 0) + 1
    if demand.sweep_id:
        key = (demand.user_id, demand.sweep_id)
        snap.sweep_jobs[key] = snap.sweep_jobs.get(key, 0) + 1
    for series, count in demand.series_gpus.items():
        snap.used[series] = snap.used.get(series, 0) + count


_EVERY = 2**31  # a waiting level no priority passes: every later job queues behind


def block(snap: Snapshot, demand: Demand) -> None:
    """Record that `demand` waits for capacity, so jobs of lower or equal priority queue behind it (every later
    job, on a `positional` snapshot)."""
    level = _EVERY if snap.positional else demand.priority
    for series in demand.series_gpus:
        snap.waiting[series] = max(snap.waiting.get(series, -(2**31)), level)


def place(snap: Snapshot, demand: Demand) -> tuple[Fit, str]:
    """Decide `demand` on `snap` and book the verdict there; return it with the reason shown when the job waits.

    The one placement step: the submission writer places a new job with it and the scheduler a waiting one, each
    in queue order on one snapshot per batch or cycle. A job that fits is assumed (the next decision counts it); a
    job that waits for capacity (busy, or behind the queue) blocks the jobs of its priority or lower on its series
    (every later job on a `positional` snapshot);
    any other verdict (a cap, a sweep limit, no capacity at all) books nothing, so later jobs may still fit.
    """
    fit, reason = decide(snap, demand)
    if fit is Fit.FITS:
        assume(snap, demand)
    elif fit in (Fit.CAPACITY_BUSY, Fit.BEHIND_QUEUE):
        block(snap, demand)
    return fit, reason
