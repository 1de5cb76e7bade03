"""Artifacts registered by runs (checkpoints, exports, reports); `run/<id>/<kind>[@step=N]` resolves to a path."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from ....contract import ArtifactRef
from ...store.models import Artifact, Job
from ..accounts import UserView

__all__ = ["ArtifactView", "list_artifacts", "register", "resolve"]


@dataclass(frozen=True)
class ArtifactView:
    """One registered artifact of a run."""

    run_id: str
    kind: str
    path: str
    format: str
    step: int | None
    size_bytes: int | None

    def to_dict(self) -> dict[str, object]:
        """Return the wire form of `GET /api/jobs/{run_id}/artifacts`."""
        return {"kind": self.kind, "path": self.path, "format": self.format, "step": self.step,
                "size_bytes": self.size_bytes, "ref": self.ref}

    @property
    def ref(self) -> str:
        """Return the reference that `init_from` accepts for this artifact."""
        base = f"run/{self.run_id}/{self.kind}"
        return base if self.step is None else f"{base}@step={self.step}"


def _view(row: Artifact) -> ArtifactView:
    return ArtifactView(row.run_id, row.kind, row.path, row.format, row.step, row.size_bytes)


def register(
    db: Session, run_id: str, kind: str, path: str, *, format: str = "", step: int | None = None,
    size_bytes: int | None = None, metrics: dict[str, object] | None = None,
) -> ArtifactView:
    """Record an artifact of a run (re-registering the same kind, path and step updates it)."""
    row = db.scalar(select(Artifact).where(Artifact.run_id == run_id, Artifact.kind == kind, Artifact.path == path))
    if row is None:
        row = Artifact(run_id=run_id, kind=kind, path=path, created_at=time.time())
        db.add(row)
    row.format, row.step, row.size_bytes = format, step, size_bytes
    row.metrics_json = json.dumps(metrics or {})
    db.flush()
    return _view(row)


def list_artifacts(db: Session, run_id: str) -> list[ArtifactView]:
    """Return a run's artifacts in registration order."""
    return [_view(r) for r in db.scalars(select(Artifact).where(Artifact.run_id == run_id).order_by(Artifact.id))]


def resolve(db: Session, ref: ArtifactRef, user: UserView) -> ArtifactView | None:
    """Return the artifact `ref` names if it exists and `user` may read it (the run's owner or an admin).

    Without `@step=N` the latest step of that kind is taken.
    """
    job = db.get(Job, ref.run_id)
    if job is None or (job.user_id != user.id and not user.is_admin):
        return None
    query = select(Artifact).where(Artifact.run_id == ref.run_id, Artifact.kind == ref.kind)
    if ref.step is not None:
        query = query.where(Artifact.step == ref.step)
    rows = list(db.scalars(query))
    if not rows:
        return None
    rows.sort(key=lambda r: (r.step if r.step is not None else -1, r.id))
    return _view(rows[-1])
