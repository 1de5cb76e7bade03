"""The daily GPU-hour budget's ledgers: what each account ran today (UTC) plus what its unfinished jobs still
reserve, read from the job rows — served to admission, the submission writer and the scheduler alike.

What a job reserves (its GPUs × its wall-time limit, less what it already ran) and whether one more job fits are
the quota policy's (`policy.reserved_hours`, `policy.over_budget`). At 00:00 UTC the hours
run yesterday drop out of the ledger, and jobs waiting for the budget start at the next placement.

Tier: query (`ledgers` runs over the caller's session and never begins or commits a transaction).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from sqlalchemy import bindparam, or_, select
from sqlalchemy.orm import Session

from ...store.models import Job
from ..jobs.rows import ACTIVE, WAITING
from .caps import QuotaView, day_start, hours_run
from .policy import Ledger, reserved_hours

__all__ = ["ledgers"]


_ROWS = select(Job.user_id, Job.status, Job.requested_gpus, Job.profile, Job.started_at, Job.finished_at)


def ledgers(db: Session, quotas: Mapping[int, QuotaView], profile_max_hours: Mapping[str, float], *,
            waiting: bool, now: float | None = None) -> dict[int, Ledger]:
    """Return the ledger of every account of `quotas` that has a daily budget, from its job rows: hours run today,
    plus what its placed and running jobs reserve — and its queued ones too with `waiting` (admission counts every
    unfinished job; the scheduler, placing queued jobs one by one, counts each as it places it)."""
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
            full = reserved_hours(gpus=gpus, profile=profile, quota=budgeted[user_id],
                                  profile_max_hours=profile_max_hours)
            ran = hours_run(gpus, started, None, since=started, now=now) if started is not None else 0.0
            reserved[user_id] += max(0.0, full - ran)
    return {user_id: Ledger(quota.daily_gpu_hours, used[user_id], reserved[user_id])
            for user_id, quota in budgeted.items()}
