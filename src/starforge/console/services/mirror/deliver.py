"""One delivery of one job's mirror (`deliver`): make its MLflow run if it has none (or mark it running again for a
new attempt), send the points stored since the last delivery in batches, and end the run with the job's outcome
once the job has ended and every point is sent. A failure is recorded on the row with its backoff, never raised.

Tier: use case (its own short transactions; the tracking server is called outside them).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ...mirror_config import MlflowMirrorSettings
from ...store import Database
from ...store.models import Job, MlflowMirror
from ..jobs.rows import TERMINAL
from . import mlflow_side, outbox
from .targets import Resolver, mirror_target, resolve

__all__ = ["FINAL_STATUS", "deliver"]

FINAL_STATUS = {"succeeded": "FINISHED", "failed": "FAILED", "stopped": "KILLED"}  # job status → MLflow run status
MAX_BATCHES = 20  # batches of one delivery, so one busy job does not hold back the others


def deliver(db: Database, job_id: str, settings: MlflowMirrorSettings, *, resolver: Resolver = resolve,
            clock: Callable[[], float] = time.time) -> None:
    """Deliver what is due of the job's mirror (leased to the caller), then let the lease go."""
    with db.read() as s:
        row, job = s.get(MlflowMirror, job_id), s.get(Job, job_id)
        if row is None or job is None or row.state != outbox.MIRRORING:
            return
        run_id, run_status, sent, uri = row.mlflow_run_id, row.run_status, row.sent_point_id, row.tracking_uri
        status, finished_at, identity = job.status, job.finished_at, outbox.identity_of(job)
        attempt, row_attempt = job.attempts or 0, row.attempt
        if row_attempt and attempt != row_attempt:  # another attempt: its points follow in the same MLflow run
            sent = outbox.sent_before_attempt(s, job_id, sent, job.resume_step)
        url = outbox.mirror_url(job, settings)
    target = mirror_target(url, settings, resolver=resolver)  # resolved again: the name may point elsewhere now
    if target.refused:  # the operator's allowlist changed, or the host now resolves elsewhere
        _update(db, job_id, clock(), values={"state": outbox.REFUSED, "error": target.refused})
        return
    try:
        if not run_id:
            run_id = mlflow_side.open_run(uri, identity)
            _update(db, job_id, clock(), values={"mlflow_run_id": run_id, "run_status": "RUNNING"}, keep_lease=True)
        elif status not in TERMINAL and run_status != "RUNNING":
            mlflow_side.reopen_run(uri, run_id)
            _update(db, job_id, clock(), values={"run_status": "RUNNING"}, keep_lease=True)
        if attempt != row_attempt:
            _update(db, job_id, clock(), values={"sent_point_id": sent, "attempt": attempt}, keep_lease=True)
        sent, drained = _send_points(db, job_id, uri, run_id, sent, settings.batch_points)
        done = status in TERMINAL and drained
        if done:
            mlflow_side.end_run(uri, run_id, FINAL_STATUS[status], finished_at)
        values: dict[str, Any] = {"failures": 0, "error": "", "next_try_at": clock() + settings.interval_seconds}
        if done:
            values.update(state=outbox.DONE, run_status=FINAL_STATUS[status])
        _update(db, job_id, clock(), values=values)
    except mlflow_side.MirrorUnavailable as exc:
        _fail(db, job_id, str(exc), clock(), settings)


def _send_points(db: Database, job_id: str, uri: str, run_id: str, sent: int, limit: int) -> tuple[int, bool]:
    """Send up to MAX_BATCHES batches; return the last point sent and whether none is left."""
    for _ in range(MAX_BATCHES):
        with db.read() as s:
            batch = outbox.points_after(s, job_id, sent, limit)
        if not batch:
            return sent, True
        mlflow_side.log_points(uri, run_id, [point for _, point in batch])
        sent = batch[-1][0]
        _update(db, job_id, time.time(), values={"sent_point_id": sent}, keep_lease=True)
        if len(batch) < limit:
            return sent, True
    return sent, False


def _update(db: Database, job_id: str, now: float, *, values: dict[str, Any], keep_lease: bool = False) -> None:
    with db.write() as s:
        row = s.get(MlflowMirror, job_id)
        if row is None:
            return
        for name, value in values.items():
            setattr(row, name, value)
        row.updated_at = now
        if not keep_lease:
            outbox.release([row])


def _fail(db: Database, job_id: str, error: str, now: float, settings: MlflowMirrorSettings) -> None:
    with db.write() as s:
        row = s.get(MlflowMirror, job_id)
        if row is None:
            return
        outbox.record_failure(row, error, now, interval=settings.interval_seconds, max_failures=settings.max_failures)
        outbox.release([row])
