"""Per-account quota: the caps an administrator sets, and the usage measured from job rows.

Tier: query (runs over the caller's session; never begins or commits a transaction).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, or_, select
from sqlalchemy.orm import Session

from ....contract import Problem
from ....wire.quota_fields import (
    INTEGER,
    MAX_AMOUNT,
    MAX_COUNT,
    MAX_PRIORITY,
    NAMES,
    QUOTA_FIELDS,
    QuotaCaps,
    QuotaField,
)
from ...settings import QuotaDefaults
from ...store.models import Job, Quota
from ..accounts.credentials import UserView
from ..errors import Rejected
from ..jobs.rows import ACTIVE  # statuses that hold quota and capacity

__all__ = ["ACTIVE", "MAX_AMOUNT", "MAX_COUNT", "MAX_PRIORITY", "QuotaView", "Usage", "day_start", "get_quota",
           "hours_run", "quotas_for", "set_quota", "usage"]


class QuotaView(QuotaCaps):
    """An account's caps (the quota table's fields); 0 means unlimited, an empty `allowed_profiles` allows every
    profile."""


@dataclass(frozen=True)
class Usage:
    """What an account uses now: active GPUs and jobs, GPU hours today and in total."""

    active_gpus: int = 0
    active_jobs: int = 0
    gpu_hours_today: float = 0.0
    gpu_hours_total: float = 0.0
    running: list[str] = field(default_factory=list)


def _default_view(defaults: QuotaDefaults) -> QuotaView:
    return QuotaView(**{cap.name: _value(cap, getattr(defaults, cap.name)) for cap in QUOTA_FIELDS})


def get_quota(db: Session, user: UserView, defaults: QuotaDefaults) -> QuotaView:
    """Return the account's quota row, or the deployment defaults when none was set."""
    row = db.get(Quota, user.id)
    return _default_view(defaults) if row is None else _row_view(row)


def quotas_for(db: Session, user_ids: set[int], defaults: QuotaDefaults) -> dict[int, QuotaView]:
    """Return the quota of each account in one query (the scheduler reads all waiting accounts at once)."""
    rows = db.connection().execute(_QUOTAS_OF, {"ids": list(user_ids)})  # plain rows: read on every batch
    found = {row.user_id: _row_view(row) for row in rows}
    default = _default_view(defaults)
    return {user_id: found.get(user_id, default) for user_id in user_ids}


_QUOTAS_OF = select(Quota.__table__).where(Quota.__table__.c.user_id.in_(bindparam("ids", expanding=True)))


def _value(cap: QuotaField, value: Any) -> Any:
    """Return a cap's value as `QuotaView` holds it: names as a tuple, a missing number as 0."""
    if cap.type == NAMES:
        return tuple(value or ())
    return cap.zero() if value is None else value


def _row_view(row: Any) -> QuotaView:
    stored = {cap.name: getattr(row, cap.name) for cap in QUOTA_FIELDS}
    return QuotaView(**{cap.name: _value(cap, json.loads(stored[cap.name] or "[]") if cap.type == NAMES
                                         else stored[cap.name]) for cap in QUOTA_FIELDS})


def _number(body: dict[str, Any], key: str, problems: list[Problem], *, integer: bool, maximum: float,
            minimum: float = 0) -> Any:
    value = body.get(key)
    if value is None or value == "":
        return 0
    kind = "a whole number" if integer else "a number"
    hint = f"send {kind} from {minimum:g} to {maximum:g}" + (" (0 = unlimited)" if minimum == 0 else "")
    if isinstance(value, bool) or not isinstance(value, (int,) if integer else (int, float)):
        problems.append(Problem(key, "not_an_integer" if integer else "not_a_number", f"must be {kind}", hint))
        return 0
    if not math.isfinite(value):
        problems.append(Problem(key, "not_finite", "NaN and infinities are refused", hint))
        return 0
    if not minimum <= value <= maximum:
        problems.append(Problem(key, "out_of_range", f"must be from {minimum:g} to {maximum:g}", hint,
                                {"got": value, "range": {"min": minimum, "max": maximum}}))
        return 0
    return value


def _names(body: dict[str, Any], cap: QuotaField, problems: list[Problem]) -> list[str]:
    names = body.get(cap.name) or []
    longest = int(cap.maximum)
    if not isinstance(names, list) or not all(isinstance(n, str) and len(n) <= longest for n in names):
        problems.append(Problem(cap.name, "invalid_request", "must be a list of profile names",
                                f'send ["cpu", "h200"]: names of at most {longest} characters'))
        return []
    return names


def _checked(merged: dict[str, Any], cap: QuotaField, problems: list[Problem]) -> Any:
    if cap.type == NAMES:
        return _names(merged, cap, problems)
    value = _number(merged, cap.name, problems, integer=cap.type == INTEGER, minimum=cap.minimum,
                    maximum=cap.maximum)
    return value if cap.type == INTEGER else float(value)


def set_quota(db: Session, user: UserView, body: dict[str, Any], defaults: QuotaDefaults) -> QuotaView:
    """Set an account's caps from the admin body; missing keys keep their current value, and a value that is not a
    finite number within its range (or, for names, not a list of names) is refused with its field; numbers are
    checked before names, each in table order."""
    current = get_quota(db, user, defaults).to_dict()
    merged = {**current, **{k: v for k, v in body.items() if k in current}}
    problems: list[Problem] = []
    values = {cap.name: _checked(merged, cap, problems)
              for cap in sorted(QUOTA_FIELDS, key=lambda cap: cap.type == NAMES)}
    if problems:
        raise Rejected("Invalid quota", problems)
    row = db.get(Quota, user.id)
    if row is None:
        row = Quota(user_id=user.id)
        db.add(row)
    for cap in QUOTA_FIELDS:
        value = values[cap.name]
        setattr(row, cap.name, json.dumps(value) if cap.type == NAMES else value)
    db.flush()
    return get_quota(db, user, defaults)


def day_start(now: float) -> float:
    """Return the start (epoch seconds) of the UTC day holding `now`: the daily budget renews then."""
    return now - (now % 86400)


def hours_run(gpus: int, started: float, finished: float | None, *, since: float, now: float) -> float:
    """Return the GPU hours a job that started at `started` ran from `since` on (until `finished`, or `now`)."""
    end = finished if finished is not None else now
    return gpus * max(0.0, end - max(started, since)) / 3600


def usage(db: Session, user_id: int, now: float | None = None, *, with_total: bool = True) -> Usage:
    """Measure an account's usage from its job rows (active GPUs and jobs; GPU hours today and, with
    `with_total`, in total — admission skips the total so its cost does not grow with the account's history)."""
    now = now or time.time()
    day = day_start(now)
    active_gpus = active_jobs = 0
    today = total = 0.0
    running: list[str] = []
    query = select(Job.id, Job.status, Job.requested_gpus, Job.started_at, Job.finished_at).where(
        Job.user_id == user_id
    )
    if not with_total:
        query = query.where(or_(Job.status.in_(ACTIVE), Job.finished_at.is_(None), Job.finished_at >= day))
    rows = db.execute(query)
    for job_id, status, gpus, started, finished in rows:
        if status in ACTIVE:
            active_gpus += gpus
            active_jobs += 1
            running.append(job_id)
        if started is not None:
            total += hours_run(gpus, started, finished, since=started, now=now)
            today += hours_run(gpus, started, finished, since=day, now=now)
    return Usage(active_gpus, active_jobs, round(today, 4), round(total, 4), running)
