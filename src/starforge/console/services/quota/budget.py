"""The daily GPU-hour budget: a job's wall-time limit, the hours it reserves, an account's ledger for today, and the
one rule deciding whether one more job fits — served to admission, the submission writer and the scheduler alike.

A job's wall-time limit is the shortest of its profile's `max_hours`, the account's `max_job_hours` and, when the
account has a daily budget, the whole budget spread over the job's GPUs (no job may outrun a day's budget, so every
job of a budgeted account has a limit). A job reserves its GPUs × that limit, less what it already ran; a queued job
reserves all of it. An account's ledger is what it ran today (UTC) plus what its unfinished jobs still reserve; a
job fits when the ledger plus the job's reservation stays within the budget. At 00:00 UTC the hours run yesterday
drop out of the ledger, and jobs waiting for the budget start at the next placement.

Tier: query (`ledgers` runs over the caller's session and never begins or commits a transaction; the rest is pure).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace

from sqlalchemy import bindparam, or_, select
from sqlalchemy.orm import Session

from ....contract import Problem
from ...store.models import Job
from ..jobs.rows import ACTIVE, WAITING
from .caps import QuotaView, day_start, hours_run

__all__ = ["Ledger", "job_hours", "ledgers", "over_budget", "wall_hours"]

_SLACK = 1e-9  # GPU hours: rounding never refuses an exact fit


def wall_hours(*, gpus: int, profile_hours: float, quota: QuotaView) -> float:
    """Return a job's wall-time limit in hours (0: none): the shortest of its profile's `max_hours`, the account's
    `max_job_hours` and, with a daily budget, the budget over the job's GPUs."""
    limits = [hours for hours in (profile_hours, quota.max_job_hours) if hours > 0]
    if quota.daily_gpu_hours > 0:
        limits.append(quota.daily_gpu_hours / max(1, gpus))
    return min(limits) if limits else 0.0


def job_hours(*, gpus: int, profile: str, quota: QuotaView, profile_max_hours: Mapping[str, float]) -> float:
    """Return the GPU hours a job not yet started reserves: its GPUs × its wall-time limit (0 without a budget)."""
    if quota.daily_gpu_hours <= 0:
        return 0.0
    return gpus * wall_hours(gpus=gpus, profile_hours=profile_max_hours.get(profile, 0.0), quota=quota)


@dataclass(frozen=True)
class Ledger:
    """An account's day against its budget: GPU hours run today (UTC), and GPU hours its unfinished jobs (and the
    earlier points of the same request) still reserve."""

    budget: float
    used: float = 0.0
    reserved: float = 0.0

    @property
    def left(self) -> float:
        """Return the GPU hours still free today (never below 0)."""
        return max(0.0, self.budget - self.used - self.reserved)

    def charged(self, hours: float) -> Ledger:
        """Return the ledger once a job reserving `hours` is counted."""
        return replace(self, reserved=self.reserved + hours)


def over_budget(ledger: Ledger | None, hours: float, *, gpus: int, field: str = "quota",
                counted: str = "your queued and running jobs") -> Problem | None:
    """Return the `quota_exhausted` problem when a job reserving `hours` on `gpus` GPUs does not fit `ledger`, else
    None (no ledger: no budget); `counted` names the jobs whose reservations the ledger holds."""
    if ledger is None or ledger.budget <= 0 or ledger.used + ledger.reserved + hours <= ledger.budget + _SLACK:
        return None
    wall = hours / max(1, gpus)
    message = (f"this job reserves {hours:.4g} GPU hours ({gpus} GPU{'s' if gpus != 1 else ''} × its {wall:.4g} h "
               f"wall-time limit) but only {ledger.left:.4g} of your daily budget of {ledger.budget:g} GPU hours are "
               f"left: {ledger.used:.4g} used today and {ledger.reserved:.4g} reserved by {counted}")
    hint = ("wait for your jobs to end or for the budget to renew at 00:00 UTC, stop queued jobs "
            "(`sf job ls --status queued`), use fewer GPUs, or ask an administrator to raise daily_gpu_hours or set "
            "a shorter max_job_hours")
    return Problem(field, "quota_exhausted", message, hint,
                   {"used": round(ledger.used, 4), "limit": ledger.budget, "reserved": round(ledger.reserved, 4),
                    "needed": round(hours, 4)})


_ROWS = select(Job.user_id, Job.status, Job.requested_gpus, Job.profile, Job.started_at, Job.finished_at)


def ledgers(db: Session, quotas: Mapping[int, QuotaView], profile_max_hours: Mapping[str, float], *,
            waiting: bool, now: float | None = None) -> dict[int, Ledger]:
    """Return the ledger of every account of `quotas` that has a daily budget, from its job rows: hours run today,
    plus what its placed and running jobs reserve — and its queued ones too with `waiting` (admission counts every
    unfinished job; the scheduler, placing queued jobs one by one, counts each as it places it). Jobs in `skip` are
    left out (the scheduler's waiting jobs, whose rows it reads itself)."""
    budgeted = {user_id: quota for user_id, quota in quotas.items() if quota.daily_gpu_hours > 0}
    if not budgeted:
        return {}
    now = now or time.time()
    day = day_start(now)
    unfinished = (*ACTIVE, *WAITING) if waiting else ACTIVE
    used = dict.fromkeys(budgeted, 0.0)
    reserved = dict.fromkeys(budgeted, 0.0)
    query = _ROWS.where(
        Job.user_id.in_(bindparam("ids", expanding=True)),
        or_(Job.status.in_(unfinished), Job.finished_at.is_(None), Job.finished_at >= day))
    for user_id, status, gpus, profile, started, finished in db.connection().execute(query, {"ids": list(budgeted)}):
        if started is not None:
            used[user_id] += hours_run(gpus, started, finished, since=day, now=now)
        if status in unfinished:
            full = job_hours(gpus=gpus, profile=profile, quota=budgeted[user_id], profile_max_hours=profile_max_hours)
            ran = hours_run(gpus, started, None, since=started, now=now) if started is not None else 0.0
            reserved[user_id] += max(0.0, full - ran)
    return {user_id: Ledger(quota.daily_gpu_hours, used[user_id], reserved[user_id])
            for user_id, quota in budgeted.items()}
