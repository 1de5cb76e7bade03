"""Fair share in the store: the accounts' weights (`shares`), their decayed GPU-seconds per series (`share_usage`,
charged when an attempt ends), the share book the scheduler orders its queue with, and the report surfaces show.

An account's usage of a series is its stored value decayed to now plus, on the fly, what its running attempts have
used (GPUs × the time since the attempt started); its allocation is the GPUs its placed and running jobs hold;
the accounts with demand on a series are those with a placed, running or waiting job there (`fairshare`).

Tier: query (runs over the caller's session, in the caller's transaction; never begins or commits one).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ....contract import Problem
from ...scheduling_config import FairShareSettings
from ...settings import Settings
from ...store.models import Job, Share, ShareUsage, User
from ..errors import Rejected
from ..jobs.rows import ACTIVE, WAITING
from .fairshare import ShareBook, decayed

__all__ = ["MAX_WEIGHT", "Active", "ShareLine", "active_jobs", "book", "charge", "report", "series_of",
           "set_weight", "stored_usage", "weights"]

MAX_WEIGHT = 1_000_000.0


class Active(NamedTuple):
    """The columns of a placed or running job fair share and preemption read (a tuple: read on every cycle)."""

    id: str
    user_id: int
    status: str
    priority: int
    requested_gpus: int
    series_gpus: str
    started_at: float | None
    attempt_started_at: float | None
    interrupt: str

    @property
    def attempt_start(self) -> float | None:
        """Return when the current attempt started (a job from before attempts were counted: when it started)."""
        return self.attempt_started_at if self.attempt_started_at is not None else self.started_at


_ACTIVE_ROWS = select(*(getattr(Job, name) for name in Active._fields)).where(Job.status.in_(ACTIVE))
_WAITING_SHAPES = (select(Job.user_id, Job.series_gpus, func.count()).where(Job.status.in_(WAITING))
                   .group_by(Job.user_id, Job.series_gpus))


def active_jobs(db: Session) -> list[Active]:
    """Return every placed and running job."""
    return list(map(Active._make, db.connection().execute(_ACTIVE_ROWS)))


def weights(db: Session) -> dict[int, float]:
    """Return the weight of every account an administrator gave one (the others have the default weight)."""
    return {user_id: weight for user_id, weight in db.connection().execute(select(Share.user_id, Share.weight))}


def stored_usage(db: Session, *, now: float, half_life: float) -> dict[tuple[int, str], float]:
    """Return the charged GPU-seconds of every (account, series), decayed to `now` (ended attempts only)."""
    rows = db.connection().execute(select(ShareUsage.user_id, ShareUsage.series, ShareUsage.gpu_seconds,
                                          ShareUsage.at))
    return {(user_id, series): decayed(value, at, now, half_life) for user_id, series, value, at in rows}


def series_of(text: str, shapes: dict[str, dict[str, int]]) -> dict[str, int]:
    """Return a job's `series_gpus` decoded, through the caller's cache of the few shapes that repeat (shared
    mappings: never change them)."""
    found = shapes.get(text)
    if found is None:
        found = shapes[text] = json.loads(text or "{}")
    return found


def book(db: Session, *, fair_share: FairShareSettings, capacity: Mapping[str, int], now: float,
         active: Sequence[Active] | None = None, waiting: Iterable[tuple[int, Mapping[str, int]]] | None = None,
         shapes: dict[str, dict[str, int]] | None = None) -> ShareBook:
    """Return the share book as of `now`: weights, usage (stored, decayed, plus running attempts), allocation and
    demand. `active` and `waiting` ((account, series_gpus) of each waiting job) are read when not given; `shapes`
    is the caller's decoding cache of `series_gpus`."""
    shapes = {} if shapes is None else shapes
    rows = active_jobs(db) if active is None else active
    usage = defaultdict(float, stored_usage(db, now=now, half_life=fair_share.half_life_seconds))
    allocation: defaultdict[tuple[int, str], int] = defaultdict(int)
    demand: defaultdict[str, set[int]] = defaultdict(set)
    for row in rows:
        series_gpus = series_of(row.series_gpus, shapes)
        start = row.attempt_start if row.status == "running" else None
        for series, count in series_gpus.items():
            allocation[(row.user_id, series)] += count
            demand[series].add(row.user_id)
            if start is not None:
                usage[(row.user_id, series)] += count * max(0.0, now - start)
    if waiting is None:
        waiting = [(user_id, series_of(text, shapes))
                   for user_id, text, _count in db.connection().execute(_WAITING_SHAPES)]
    for user_id, asked in waiting:
        for series in asked:
            demand[series].add(user_id)
    return ShareBook(weights=weights(db), default_weight=fair_share.default_weight, usage=usage,
                     allocation=allocation, capacity=capacity, demand=demand)


def charge(db: Session, user_id: int, series_gpus: Mapping[str, int], seconds: float, *, now: float,
           half_life: float) -> None:
    """Add the GPUs × `seconds` of an ended attempt to the account's usage of each series (the stored value decayed
    to `now` first)."""
    for series, count in series_gpus.items():
        row = db.get(ShareUsage, (user_id, series))
        added = count * max(0.0, seconds)
        if row is None:
            db.add(ShareUsage(user_id=user_id, series=series, gpu_seconds=added, at=now))
        else:
            row.gpu_seconds = decayed(row.gpu_seconds, row.at, now, half_life) + added
            row.at = max(row.at, now)
    db.flush()


def _checked_weight(weight: object) -> float:
    hint = f"send a number greater than 0 and at most {MAX_WEIGHT:g} (the default weight is 1)"
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        raise Rejected("Invalid share", [Problem("weight", "not_a_number", "must be a number", hint,
                                                 {"got": str(weight)})])
    if not math.isfinite(weight):
        raise Rejected("Invalid share", [Problem("weight", "not_finite", "NaN and infinities are refused", hint)])
    if not 0 < weight <= MAX_WEIGHT:
        raise Rejected("Invalid share", [Problem("weight", "out_of_range",
                                                 f"must be greater than 0 and at most {MAX_WEIGHT:g}", hint,
                                                 {"got": weight, "range": {"exclusive_min": 0, "max": MAX_WEIGHT}})])
    return float(weight)


def set_weight(db: Session, user_id: int, weight: float, *, now: float) -> float:
    """Set the account's fair-share weight and return it; a weight that is not a finite number > 0 (and at most
    `MAX_WEIGHT`) is refused with the field `weight` (`Rejected`)."""
    value = _checked_weight(weight)
    row = db.get(Share, user_id)
    if row is None:
        db.add(Share(user_id=user_id, weight=value, updated_at=now))
    else:
        row.weight, row.updated_at = value, now
    db.flush()
    return value


@dataclass(frozen=True)
class ShareLine:
    """One account's fair share, per series: the slots it is entitled to (`share`), its decayed GPU-hours
    (running attempts included), the GPUs it holds now, those beyond its share, and how many of its jobs wait."""

    user_id: int
    username: str
    weight: float
    share: dict[str, float]
    usage_gpu_hours: dict[str, float]
    allocated: dict[str, int]
    borrowed: dict[str, float]
    waiting_jobs: int


def report(db: Session, *, settings: Settings, capacity: Mapping[str, int], now: float) -> list[ShareLine]:
    """Return the fair share of every enabled account, and of any other with a weight, a usage, or a placed, running or
    waiting job, by username; each mapping has every series of the deployment and of the account's usage."""
    shapes: dict[str, dict[str, int]] = {}
    waiting_rows = list(db.connection().execute(_WAITING_SHAPES))
    waiting_count: defaultdict[int, int] = defaultdict(int)
    for user_id, _text, count in waiting_rows:
        waiting_count[user_id] += count
    active = active_jobs(db)
    current = book(db, fair_share=settings.fair_share, capacity=capacity, now=now, active=active, shapes=shapes,
                   waiting=((user_id, series_of(text, shapes)) for user_id, text, _count in waiting_rows))
    usage = stored_usage(db, now=now, half_life=settings.fair_share.half_life_seconds)
    used_series: defaultdict[int, set[str]] = defaultdict(set)
    for user_id, series in usage:
        used_series[user_id].add(series)
    for row in active:
        used_series[row.user_id].update(series_of(row.series_gpus, shapes))
    names = {user_id: name for user_id, name in db.connection().execute(
        select(User.id, User.username).where(User.disabled.is_(False)))}
    accounts = set(used_series) | set(waiting_count) | set(weights(db)) | set(names)
    lines = []
    for user_id in accounts:
        every = sorted(set(capacity) | used_series[user_id])
        lines.append(ShareLine(
            user_id=user_id, username=names.get(user_id, ""), weight=current.weight(user_id),
            share={series: round(current.share(user_id, series), 3) for series in every},
            usage_gpu_hours={series: round(current.usage(user_id, series) / 3600, 3) for series in every},
            allocated={series: current.allocation(user_id, series) for series in every},
            borrowed={series: round(current.borrowed(user_id, series), 3) for series in every},
            waiting_jobs=waiting_count[user_id]))
    return sorted(lines, key=lambda line: (line.username, line.user_id))
