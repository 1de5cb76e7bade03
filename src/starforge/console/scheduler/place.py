"""Phase 1, place: decide every waiting job on one snapshot, in fair order, and commit the new statuses at once.

Under the capacity lock: take every waiting job in queue order (quota priority, then submission time) and serve
them in fair order (`fairshare`: their account's decayed usage and allocation over its weight, on the share book
read from the store — off: the queue order), the jobs waiting for jobs they preempted first
(`placement.decide_queue`). Each job: check the account's daily GPU-hour budget again (`policy.budget_wait`, on
ledgers of the hours run today and reserved by placed and running jobs, each placement charged), place it with
`capacity.place` (the submission writer's placement step), and — preemption on, when it waits for capacity — ask
the cycle's `Preemptor` which running jobs it may preempt: each victim is asked to checkpoint and stop
(`rows.interrupt_job`), and the job waits for them. Then commit the changes. A job the budget no longer fits waits
`queued` with the quota reason (a follow-up step is exempt, as at its admission). While the console is in
maintenance nothing is placed: the waiting jobs are held, with the note as their reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from sqlalchemy import bindparam, func, or_, select
from sqlalchemy.orm import Session

from ..services import maintenance
from ..services.context import Runtime
from ..services.jobs.rows import QUEUE_ORDER, WAITING, interrupt_job, set_status
from ..services.quota import capacity, policy, shares
from ..services.quota.budget import ledgers
from ..services.quota.capacity import Demand, Fit, demand_of, take_snapshot
from ..services.quota.caps import quotas_for
from ..services.quota.placement import Decision, decide_queue, waits_for_preempted
from ..services.quota.preemption import Preemptor, Running, why
from ..services.sweeps.rows import sweep_limits
from ..store.models import Artifact, Job
from .clock import Clock

__all__ = ["hold", "place"]


class _Waiting(NamedTuple):
    """The columns of a waiting job the place phase reads (a `capacity.JobShape`; a tuple: read 10,000 at a time,
    where a result row's attribute lookups would cost more than the decisions)."""

    id: str
    user_id: int
    requested_gpus: int
    series_gpus: str
    priority: int
    status: str
    waiting_for: str
    reason: str
    sweep_id: str
    profile: str
    action: str


_WAITING_ROWS = select(*(getattr(Job, name) for name in _Waiting._fields))
_CHECKPOINTS = (select(Artifact.run_id, func.max(Artifact.created_at))
                .where(Artifact.kind == "checkpoint", Artifact.run_id.in_(bindparam("ids", expanding=True)))
                .group_by(Artifact.run_id))


def place(rt: Runtime, clock: Clock) -> int:
    """Decide every waiting job on one snapshot and commit the placements; return how many were placed."""
    held = rt.maintenance.current()
    if held.on:
        return hold(rt, held.note, clock)
    now = clock.now()
    fair, preemption = rt.settings.fair_share, rt.settings.preemption
    with rt.db.write() as db:
        rt.db.lock_capacity(db)
        waiting = list(map(_Waiting._make, db.execute(
            _WAITING_ROWS.where(Job.status.in_(WAITING)).order_by(*QUEUE_ORDER))))
        if not waiting:
            return 0
        snap = take_snapshot(db, rt.capacity)
        snap.waiting = {}
        quotas = quotas_for(db, {row.user_id for row in waiting}, rt.settings.quota)
        limits = sweep_limits(db, {(row.user_id, row.sweep_id) for row in waiting if row.sweep_id})  # --max-parallel
        hours_of = rt.settings.profile_max_hours
        books = ledgers(db, quotas, hours_of, waiting=False, now=now)  # the daily budget: run today, placed, running
        shapes: dict[str, dict[str, int]] = {}  # the same few shapes repeat across thousands of jobs
        rows = {row.id: row for row in waiting}
        demands = [demand_of(row, quotas[row.user_id].max_concurrent_gpus, quotas[row.user_id].max_concurrent_jobs,
                             limits.get((row.user_id, row.sweep_id), 0), shapes=shapes) for row in waiting]
        active = shares.active_jobs(db) if fair.enabled or preemption.on else []
        book = None
        if fair.enabled or preemption.policy == "fair-share":
            book = shares.book(db, fair_share=fair, capacity=snap.capacity, now=now, active=active,
                               waiting=((d.user_id, d.series_gpus) for d in demands), shapes=shapes)
        preemptor = first = None
        if preemption.on:
            preemptor = Preemptor(snap, _running(db, active, shapes), policy=preemption.policy, now=now)
            first = {row.id for row in waiting if row.waiting_for == "capacity" and waits_for_preempted(row.reason)}
        reserved: dict[str, float] = {}

        def budget(demand: Demand) -> tuple[Fit, str] | None:
            row = rows[demand.job_id]
            ledger = books.get(row.user_id)  # None: no daily budget, so the job reserves no hours of one
            if ledger is None:
                return None
            hours = policy.reserved_hours(gpus=row.requested_gpus, profile=row.profile, quota=quotas[row.user_id],
                                          profile_max_hours=hours_of)
            wait = policy.budget_wait(ledger, hours=hours, gpus=row.requested_gpus, followup=bool(row.action))
            if wait is not None:
                return capacity.held_by(wait)
            reserved[row.id] = hours
            return None

        def charge(demand: Demand) -> None:
            hours = reserved.get(demand.job_id)
            if hours is not None:
                books[demand.user_id] = books[demand.user_id].charged(hours)

        changes: list[Decision] = []
        for decision in decide_queue(snap, demands, book=book, fair=fair.enabled, preemptor=preemptor,
                                     first=first or (), held=budget, placed=charge):
            if _changed(rows[decision.demand.job_id], decision):
                changes.append(decision)
        return _commit(db, changes, grace=preemption.grace_seconds, now=now)


def _running(db: Session, active: Sequence[shares.Active], shapes: dict[str, dict[str, int]]) -> list[Running]:
    """Return the running jobs as preemption sees them, each with its latest checkpoint's time."""
    running = [row for row in active if row.status == "running"]
    checkpoints: dict[str, float] = {}
    if running:
        checkpoints = dict(db.connection().execute(_CHECKPOINTS, {"ids": [row.id for row in running]}).all())
    return [Running(row.id, row.user_id, row.priority, row.requested_gpus, shares.series_of(row.series_gpus, shapes),
                    row.attempt_start or 0.0, checkpoints.get(row.id), bool(row.interrupt)) for row in running]


def _changed(row: _Waiting, decision: Decision) -> bool:
    """Return whether a decision changes the job's row: a waiting job is rewritten only when what it waits for
    changes (not on every cycle), or when it starts or stops waiting for jobs it preempted."""
    if decision.fit is Fit.FITS or row.status != decision.fit.status or row.waiting_for != decision.fit.waiting_for:
        return True
    if decision.claim is not None:
        return bool(decision.claim.victims) or decision.reason != row.reason
    return waits_for_preempted(row.reason)


def _commit(db: Session, changes: list[Decision], *, grace: float, now: float) -> int:
    """Write the decisions: placements, what each waiting job now waits for, and the victims' interrupts."""
    victims = [victim.job_id for decision in changes if decision.claim is not None
               for victim in decision.claim.victims]
    placed = 0
    with db.no_autoflush:
        jobs = {job.id: job for job in db.scalars(select(Job).where(Job.id.in_(
            [decision.demand.job_id for decision in changes] + victims)))}
    for decision in changes:
        job = jobs[decision.demand.job_id]
        if decision.fit is Fit.FITS:
            set_status(db, job, "submitted", reason="placed", at=now)
            job.reason = ""
            placed += 1
            continue
        set_status(db, job, decision.fit.status, reason=decision.reason, waiting_for=decision.fit.waiting_for, at=now)
        for victim in decision.claim.victims if decision.claim is not None else ():
            interrupt_job(db, jobs[victim.job_id], "preempt", by=job.id, at=now, reason=(
                f"preempted by {job.id} ({why(decision.demand, victim)}): saving a checkpoint, then stopping "
                f"within {grace:g} s"))
    return placed


def hold(rt: Runtime, note: str, clock: Clock) -> int:
    """Keep every waiting job waiting for the end of maintenance (each one rewritten once); return 0."""
    reason = f"the console is in maintenance: {note}" if note else "the console is in maintenance"
    now = clock.now()
    with rt.db.write() as db:
        for job in db.scalars(select(Job).where(Job.status.in_(WAITING), or_(
                Job.waiting_for != maintenance.WAITING_FOR, Job.reason != reason))):
            set_status(db, job, job.status, reason=reason, waiting_for=maintenance.WAITING_FOR, at=now)
    return 0
