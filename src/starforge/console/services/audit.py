"""The admission audit log: every admission decision (submissions and follow-ups) with its problems and warnings.

Tier: query (runs over the caller's session; never begins or commits a transaction). A decision is recorded in the
transaction that acts on it: an accepted submission in the one that writes its job, a follow-up in the
scheduler's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ...contract import Problem
from ..store.models import Admission

__all__ = ["MAX_ADMISSIONS_LIMIT", "decision_row", "decisions_for_job", "decisions_of"]

MAX_ADMISSIONS_LIMIT = 500  # rows of one listing


def decision_row(
    *,
    user_id: int,
    source: str,
    verdict: str,
    exp: str,
    recipe: str,
    job_id: str = "",
    problems: Sequence[Problem] = (),
    warnings: Sequence[Problem] = (),
) -> Admission:
    """Return one decision's row for the caller to add: `source` is submit or followup, `verdict` accepted, queued or
    rejected (the submission writer inserts a batch of them at once)."""
    return Admission(user_id=user_id, at=time.time(), source=source, verdict=verdict, job_id=job_id,
                     exp=exp[:1000], recipe=recipe[:255], problems_json=json.dumps([p.to_dict() for p in problems]),
                     warnings_json=json.dumps([w.to_dict() for w in warnings]))


def decisions_of(db: Session, user_id: int, *, limit: int) -> list[dict[str, Any]]:
    """Return the account's decisions newest first, in their wire form."""
    rows = db.scalars(select(Admission).where(Admission.user_id == user_id).order_by(Admission.at.desc())
                      .limit(min(limit, MAX_ADMISSIONS_LIMIT)))
    return [_wire(r) for r in rows]


def decisions_for_job(db: Session, user_id: int, job_id: str) -> list[dict[str, Any]]:
    """Return the decisions recorded for job `job_id` of account `user_id` (its submission, or the follow-up
    check that created it), newest first, in their wire form."""
    rows = db.scalars(select(Admission).where(Admission.user_id == user_id, Admission.job_id == job_id)
                      .order_by(Admission.at.desc(), Admission.id.desc()))
    return [_wire(r) for r in rows]


def _wire(r: Admission) -> dict[str, Any]:
    return {"at": r.at, "source": r.source, "verdict": r.verdict, "job_id": r.job_id or None, "exp": r.exp,
            "recipe": r.recipe, "problems": json.loads(r.problems_json), "warnings": json.loads(r.warnings_json)}
