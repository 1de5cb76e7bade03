"""Phase 1, place: decide every waiting job on one snapshot, in queue order, and commit the new statuses at once.

Under the capacity lock: take every waiting job in queue order (quota priority, then submission time), check the
account's daily GPU-hour budget again (`policy.budget_wait`, on ledgers of the hours run today and reserved by
placed and running jobs, each placement charged), place the job with `capacity.place` (the submission writer's
placement step: decide on the snapshot, then assume or block), and commit the changes. A job the budget no longer
fits waits `queued` with the quota reason (a follow-up step is exempt, as at its admission). While the console is in
maintenance nothing is placed: the waiting jobs are held, with the note as their reason.
"""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy import or_, select

from ..services import maintenance
from ..services.context import Runtime
from ..services.jobs.rows import QUEUE_ORDER, WAITING, set_status
from ..services.quota import capacity, policy
from ..services.quota.budget import ledgers
from ..services.quota.capacity import Fit, demand_of, take_snapshot
from ..services.quota.caps import quotas_for
from ..services.sweeps.rows import sweep_limits
from ..store.models import Job
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
    sweep_id: str
    profile: str
    action: str


_WAITING_ROWS = select(*(getattr(Job, name) for name in _Waiting._fields))


def place(rt: Runtime, clock: Clock) -> int:
    """Decide every waiting job on one snapshot and commit the placements; return how many were placed."""
    held = rt.maintenance.current()
    if held.on:
        return hold(rt, held.note, clock)
    now = clock.now()
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
        changes: list[tuple[str, Fit, str]] = []
        for row in waiting:
            quota = quotas[row.user_id]
            ledger = books.get(row.user_id)  # None: no daily budget, so the job reserves no hours of one
            hours = wait = None
            if ledger is not None:
                hours = policy.reserved_hours(gpus=row.requested_gpus, profile=row.profile, quota=quota,
                                              profile_max_hours=hours_of)
                wait = policy.budget_wait(ledger, hours=hours, gpus=row.requested_gpus, followup=bool(row.action))
            if wait is not None:
                fit, reason = capacity.held_by(wait)
            else:
                demand = demand_of(row, quota.max_concurrent_gpus, quota.max_concurrent_jobs,
                                   limits.get((row.user_id, row.sweep_id), 0), shapes=shapes)
                fit, reason = capacity.place(snap, demand)
            if fit is Fit.FITS:
                if ledger is not None and hours is not None:
                    books[row.user_id] = ledger.charged(hours)
                changes.append((row.id, fit, ""))
            elif row.status != fit.status or row.waiting_for != fit.waiting_for:
                # a waiting job is rewritten only when what it waits for changes, not on every cycle
                changes.append((row.id, fit, reason))
        placed = 0
        with db.no_autoflush:
            jobs = {job.id: job for job in db.scalars(select(Job).where(Job.id.in_([c[0] for c in changes])))}
        for job_id, fit, reason in changes:
            job = jobs[job_id]
            if fit is Fit.FITS:
                set_status(db, job, "submitted", reason="placed", at=now)
                job.reason = ""
                placed += 1
            else:
                set_status(db, job, fit.status, reason=reason, waiting_for=fit.waiting_for, at=now)
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
