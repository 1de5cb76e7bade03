"""What the store says at scrape time, aggregated in SQL: jobs per status and series, the queue per series, the GPUs
placed per series and account, and the admission decisions (counted once per row, from the audit table).

Tier: query (runs over the caller's session; never begins or commits a transaction). A scrape reads a handful of
grouped rows — one per distinct (status, series demand) — so it stays cheap with tens of thousands of jobs. A job
whose pools span several series is counted under each of them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ...store.models import Admission, Job
from ..jobs.rows import ACTIVE, WAITING
from .recorder import AdmissionTally

__all__ = ["SETTLE_SECONDS", "StoreFigures", "admission_counts", "store_figures"]

# an audit row older than this is counted once and for all; a younger one may still have a transaction with a lower
# id in flight (PostgreSQL hands out ids before commit), so it is counted afresh on each scrape until it settles
SETTLE_SECONDS = 120.0


@dataclass(frozen=True)
class StoreFigures:
    """Counts read from the store: jobs by (status, series); per series the waiting jobs and the oldest one's
    submission time; placed GPUs by (series, account); decisions by (source, verdict) and rejections by (source,
    code)."""

    jobs: dict[tuple[str, str], int]
    waiting: dict[str, int]
    oldest_submitted: dict[str, float]
    placed_gpus: dict[tuple[str, str], int]
    decisions: dict[tuple[str, str], int]
    codes: dict[tuple[str, str], int]


def _series(series_json: str) -> dict[str, int]:
    try:
        parsed: Any = json.loads(series_json or "{}")
    except ValueError:
        return {}
    return {str(k): int(v) for k, v in parsed.items()} if isinstance(parsed, dict) else {}


def store_figures(db: Session, tally: AdmissionTally, *, now: float) -> StoreFigures:
    """Return the store's figures, advancing `tally` past the audit rows that have settled (older than
    SETTLE_SECONDS at `now`)."""
    jobs: dict[tuple[str, str], int] = {}
    for status, series_json, count in db.execute(
            select(Job.status, Job.series_gpus, func.count()).group_by(Job.status, Job.series_gpus)):
        for series in _series(series_json) or {"": 0}:
            jobs[(status, series)] = jobs.get((status, series), 0) + int(count)
    waiting: dict[str, int] = {}
    oldest: dict[str, float] = {}
    for series_json, count, first in db.execute(
            select(Job.series_gpus, func.count(), func.min(Job.submitted_at))
            .where(Job.status.in_(WAITING)).group_by(Job.series_gpus)):
        for series in _series(series_json):
            waiting[series] = waiting.get(series, 0) + int(count)
            oldest[series] = min(oldest.get(series, float(first)), float(first))
    placed: dict[tuple[str, str], int] = {}
    for username, series_json, count in db.execute(
            select(Job.username, Job.series_gpus, func.count()).where(Job.status.in_(ACTIVE))
            .group_by(Job.username, Job.series_gpus)):
        for series, gpus in _series(series_json).items():
            placed[(series, username)] = placed.get((series, username), 0) + gpus * int(count)
    decisions, codes = admission_counts(db, tally, now=now)
    return StoreFigures(jobs, waiting, oldest, placed, decisions, codes)


def _count_rows(db: Session, after: int, upto: int, decisions: dict[tuple[str, str], int],
                codes: dict[tuple[str, str], int]) -> None:
    for source, verdict, count in db.execute(
            select(Admission.source, Admission.verdict, func.count())
            .where(Admission.id > after, Admission.id <= upto).group_by(Admission.source, Admission.verdict)):
        decisions[(source, verdict)] = decisions.get((source, verdict), 0) + int(count)
    for source, problems_json, count in db.execute(
            select(Admission.source, Admission.problems_json, func.count())
            .where(Admission.id > after, Admission.id <= upto, Admission.verdict == "rejected")
            .group_by(Admission.source, Admission.problems_json)):
        try:
            problems = json.loads(problems_json or "[]")
        except ValueError:
            problems = []
        for code in sorted({str(p.get("code", "")) for p in problems if isinstance(p, dict)} or {"unknown"}):
            codes[(source, code)] = codes.get((source, code), 0) + int(count)


def admission_counts(db: Session, tally: AdmissionTally, *, now: float) -> tuple[dict[tuple[str, str], int],
                                                                                  dict[tuple[str, str], int]]:
    """Return every admission decision counted by (source, verdict), and rejections by (source, problem code) — a
    rejection counts once under each distinct code it carried — reading only the rows `tally` has not settled."""
    last = db.scalar(select(func.max(Admission.id))) or 0
    settled = db.scalar(select(func.max(Admission.id)).where(Admission.id > tally.settled_id,
                                                              Admission.at < now - SETTLE_SECONDS))
    if settled is not None and settled > tally.settled_id:
        _count_rows(db, tally.settled_id, settled, tally.decisions, tally.codes)
        tally.settled_id = settled
    decisions, codes = dict(tally.decisions), dict(tally.codes)
    if last > tally.settled_id:
        _count_rows(db, tally.settled_id, last, decisions, codes)
    return decisions, codes
