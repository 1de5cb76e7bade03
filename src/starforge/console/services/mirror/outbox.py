"""The mirror's rows: find the jobs to mirror, record where to (`add_mirror`), claim due rows with a lease so one
process delivers each, read the points not yet sent, and record each delivery's progress or failure. The points
themselves are the outbox: they are stored by ingestion (`jobs.metrics.record_points`) and a mirror only keeps the
last one it sent, so nothing waits in memory and nothing is lost while a tracking server is down.

Tier: query (runs over the caller's session; never begins or commits a transaction).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, func, or_, select, update
from sqlalchemy.orm import Session

from ....recipes import Catalog
from ...mirror_config import MlflowMirrorSettings
from ...store.models import Job, MetricPoint, MlflowMirror
from ..jobs.rows import TERMINAL
from .mlflow_side import Point, RunIdentity
from .targets import Target

__all__ = ["MIRRORING", "claim_due", "external_recipes", "identity_of", "jobs_to_mirror", "add_mirror",
           "pending_points", "points_after", "record_failure", "sent_before_attempt", "reawaken", "release", "observability_url", "mirror_url"]

MIRRORING, DONE, REFUSED, GAVE_UP = "mirroring", "done", "refused", "gave_up"


def external_recipes(catalog: Catalog) -> tuple[str, ...]:
    """Return the ids of the recipes whose jobs report to an external tracker (`observability: external`)."""
    return tuple(sorted(r.id for r in catalog if r.observability == "external"))


def jobs_to_mirror(db: Session, recipes: Sequence[str] | None, *, since: float = 0.0, limit: int = 100) -> list[Job]:
    """Return jobs of `recipes` (None: of every recipe) submitted at `since` or later that have no mirror row yet,
    oldest first."""
    if recipes is not None and not recipes:
        return []
    known = exists().where(MlflowMirror.job_id == Job.id)
    query = select(Job).where(Job.submitted_at >= since, ~known)
    if recipes is not None:
        query = query.where(Job.recipe.in_(recipes))
    return list(db.scalars(query.order_by(Job.submitted_at).limit(limit)))


def observability_url(job: Job) -> str:
    """Return the job's `spec.framework.observability_url` ("" when none)."""
    spec = json.loads(job.spec_json or "{}")
    framework = (spec.get("spec") or {}).get("framework") or {}
    url = framework.get("observability_url") if isinstance(framework, dict) else ""
    return url if isinstance(url, str) else ""


def mirror_url(job: Job, settings: MlflowMirrorSettings) -> str:
    """Return where `job`'s metrics go: its own observability URL, else the operator's `mlflow.mirror_all` ("")."""
    return observability_url(job) or settings.mirror_all


def add_mirror(db: Session, job_id: str, target: Target, now: float) -> MlflowMirror | None:
    """Record the job's mirror: to be delivered when its target is allowed, else refused with the reason (None when
    another process recorded it first, or the job is gone)."""
    if db.get(MlflowMirror, job_id) is not None or db.get(Job, job_id) is None:
        return None
    row = MlflowMirror(job_id=job_id, tracking_uri=target.tracking_uri, state=REFUSED if target.refused else MIRRORING,
                       mlflow_run_id="", sent_point_id=0, attempt=0, run_status="", failures=0, error=target.refused,
                       next_try_at=now, lease_owner="", lease_expires_at=0.0, updated_at=now)
    db.add(row)
    return row


def reawaken(db: Session, now: float) -> int:
    """Deliver again the finished mirrors whose job started another attempt; return how many."""
    again = select(Job.id).where(Job.id == MlflowMirror.job_id, Job.status.not_in(TERMINAL)).exists()
    done = db.execute(update(MlflowMirror).where(MlflowMirror.state == DONE, again)
                      .values(state=MIRRORING, next_try_at=now, updated_at=now).execution_options(synchronize_session=False))
    return int(getattr(done, "rowcount", 0) or 0)


def claim_due(db: Session, owner: str, now: float, lease_seconds: float, limit: int = 50) -> list[str]:
    """Lease up to `limit` due mirrors to `owner` (a row leased by another live process is left alone); return
    their job ids."""
    free = or_(MlflowMirror.lease_expires_at < now, MlflowMirror.lease_owner == owner)
    due = and_(MlflowMirror.state == MIRRORING, MlflowMirror.next_try_at <= now, free)
    ids = list(db.scalars(select(MlflowMirror.job_id).where(due).order_by(MlflowMirror.next_try_at).limit(limit)))
    claimed = []
    for job_id in ids:  # compare and set: of two processes claiming a row, one wins
        won = db.execute(update(MlflowMirror).where(MlflowMirror.job_id == job_id, due)
                         .values(lease_owner=owner, lease_expires_at=now + lease_seconds)
                         .execution_options(synchronize_session=False))
        if getattr(won, "rowcount", 0):
            claimed.append(job_id)
    return claimed


def points_after(db: Session, job_id: str, after: int, limit: int) -> list[tuple[int, Point]]:
    """Return the job's stored points after point id `after`, oldest first, at most `limit`."""
    rows = db.execute(select(MetricPoint.id, MetricPoint.key, MetricPoint.value, MetricPoint.step, MetricPoint.ts)
                      .where(MetricPoint.run_id == job_id, MetricPoint.id > after)
                      .order_by(MetricPoint.id).limit(limit))
    return [(int(i), Point(key, float(value), step, float(ts))) for i, key, value, step, ts in rows]


def sent_before_attempt(db: Session, job_id: str, sent: int, resume_step: int | None) -> int:
    """Return where a mirror's cursor stands once the job started another attempt: at its last point sent that the
    attempt kept. A later attempt drops the points beyond the step it resumes from (every stepped point when it
    starts over: `jobs.attempts.drop_replayed`), and SQLite may give the attempt's own points the ids the dropped
    ones had; the kept ones are the points without a step or at most at `resume_step`."""
    kept: ColumnElement[bool] = MetricPoint.step.is_(None)
    if resume_step is not None:
        kept = or_(kept, MetricPoint.step <= resume_step)
    found = db.scalar(select(func.max(MetricPoint.id)).where(MetricPoint.run_id == job_id, MetricPoint.id <= sent, kept))
    return int(found or 0)


def pending_points(db: Session, job_id: str, after: int) -> int:
    """Return how many of the job's stored points are not mirrored yet."""
    return int(db.scalar(select(func.count()).select_from(MetricPoint)
                         .where(MetricPoint.run_id == job_id, MetricPoint.id > after)) or 0)


def identity_of(job: Job) -> RunIdentity:
    """Return how the job's MLflow run is named: the experiment `<project>/<experiment>` (the experiment alone when
    the job has no project), the job's name, its ref, recipe, owner and lab commit as tags, its hyperparameters as
    parameters."""
    spec = json.loads(job.spec_json or "{}")
    meta = json.loads(job.meta_json or "{}")
    exp = (job.exp or "").strip("/").rsplit("/", 1)[-1] or job.name
    params: dict[str, Any] = (spec.get("spec") or {}).get("hyperparams") or {}
    commit = str(meta.get("git_commit") or (spec.get("provenance") or {}).get("git_commit") or "")
    tags = {"starforge.job_ref": job.id, "starforge.recipe": job.recipe, "starforge.owner": job.username,
            "starforge.experiment": job.exp}
    if commit:
        tags["mlflow.source.git.commit"] = commit
    return RunIdentity(experiment=f"{job.project}/{exp}" if job.project else exp, run_name=job.name, tags=tags,
                       params={str(k): json.dumps(v) if not isinstance(v, str) else v for k, v in params.items()})


def record_failure(row: MlflowMirror, error: str, now: float, *, interval: float, max_failures: int) -> None:
    """Count a failed delivery: try again later (backoff doubling up to five minutes), or give up after
    `max_failures` in a row; the error is kept for the owner to read."""
    row.failures += 1
    row.error = error[:2000]
    row.next_try_at = now + min(300.0, interval * 2 ** min(row.failures, 16))
    if row.failures >= max_failures:
        row.state = GAVE_UP
    row.updated_at = now


def release(rows: Iterable[MlflowMirror]) -> None:
    """Let the rows' leases go."""
    for row in rows:
        row.lease_owner, row.lease_expires_at = "", 0.0
