"""Where a run comes from and what came of it: its `init_from` parent, its follow-ups, the runs started from it, and
its sweep.

Tier: use case (`lineage` owns one read transaction). Only the caller's own jobs appear: a parent or child of
another account is left out, never named.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ...store.models import Job
from ..accounts.view import UserView
from ..context import Runtime
from ..jobs import queries as job_queries
from .inputs import inputs_of

__all__ = ["MAX_CHILDREN", "lineage"]

MAX_CHILDREN = 200


def _node(job: Job, relation: str) -> dict[str, Any]:
    return {"job_ref": job.id, "name": job.name, "status": job.status, "action": job.action or "train",
            "relation": relation}


def _own(db: Session, job_id: str, user_id: int) -> Job | None:
    found = db.get(Job, job_id) if job_id else None
    return found if found is not None and found.user_id == user_id else None


def _started_from(db: Session, job: Job) -> list[Job]:
    """The caller's runs whose `spec.model.init_from` names a run/<job.id>/… artifact."""
    rows = db.scalars(select(Job).where(Job.user_id == job.user_id, Job.id != job.id,
                                        Job.spec_json.contains(f"run/{job.id}/"))
                      .order_by(Job.submitted_at).limit(MAX_CHILDREN))
    out = []
    for row in rows:
        init = (inputs_of(db, row)["model"]["init_from"] or {})
        if init.get("run") == job.id and row.parent_id != job.id:
            out.append(row)
    return out


def lineage(rt: Runtime, *, user: UserView, ref: str) -> dict[str, Any]:
    """Return `{job_ref, parents, children, sweep_id}` of the caller's run `ref`: `parents` the job it follows up
    (`parent_id`) and the run its `init_from` names, `children` its follow-ups (exports, evaluations, benchmarks,
    services) and the runs that start from it, each `{job_ref, name, status, action, relation}`, of the caller only."""
    with rt.db.read() as db:
        job = job_queries.find_job(db, user, ref)
        parents: list[dict[str, Any]] = []
        follows = _own(db, job.parent_id, job.user_id)
        if follows is not None:
            parents.append(_node(follows, f"{job.action or 'follow-up'} of"))
        init = inputs_of(db, job)["model"]["init_from"] or {}
        started = _own(db, str(init.get("run", "")), job.user_id)
        if started is not None and (follows is None or started.id != follows.id):
            parents.append(_node(started, "init_from"))
        children = [_node(c, c.action or "follow-up") for c in db.scalars(
            select(Job).where(Job.parent_id == job.id, Job.user_id == job.user_id)
            .order_by(Job.submitted_at).limit(MAX_CHILDREN))]
        children += [_node(c, "started from it") for c in _started_from(db, job)]
        return {"job_ref": job.id, "name": job.name, "status": job.status, "action": job.action or "train",
                "parents": parents, "children": children, "sweep_id": job.sweep_id or None}
