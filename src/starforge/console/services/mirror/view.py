"""What the owner of a job reads of its MLflow mirror (`mirror_of`): where to, its state, the MLflow run, how many
points are sent and waiting, and the last failure.

Tier: use case (one read transaction).
"""

from __future__ import annotations

from typing import Any

from ...store.models import MlflowMirror
from ..accounts.credentials import UserView
from ..context import Runtime
from ..jobs.queries import find_job
from .outbox import pending_points

__all__ = ["mirror_of"]

_MEANING = {
    "mirroring": "the job's metrics are being mirrored",
    "done": "every metric is mirrored and the MLflow run has ended with the job",
    "refused": "this console does not mirror to that URL",
    "gave_up": "the tracking server kept failing; the metrics stay on the console",
}


def mirror_of(rt: Runtime, *, user: UserView, ref: str) -> dict[str, Any]:
    """Return `{job_ref, mirror}`: the job's mirror (None when it has none) for a caller who may see the job."""
    with rt.db.read() as s:
        job = find_job(s, user, ref)
        row = s.get(MlflowMirror, job.id)
        if row is None:
            return {"job_ref": job.id, "mirror": None}
        return {"job_ref": job.id, "mirror": {
            "kind": "mlflow", "tracking_uri": row.tracking_uri, "state": row.state, "meaning": _MEANING[row.state],
            "mlflow_run_id": row.mlflow_run_id or None, "run_status": row.run_status or None,
            "pending_points": pending_points(s, job.id, row.sent_point_id), "failures": row.failures,
            "error": row.error or None, "next_try_at": row.next_try_at if row.state == "mirroring" else None}}
