"""Artifacts registered by runs (checkpoints, exports, reports); `run/<id>/<kind>[@step=N]` resolves to a path.

A run registers only files inside its own output folder (symbolic links resolved), or remote URLs; `init_from`
resolves only to an artifact that is still inside the producing run's output folder. The registry keeps the
console's path of each file; users are shown the path its job saw (`shown_path`, e.g.
`/forge/runs/<user>/<exp>/<run_id>/out/…` in the sandbox), never the console machine's.

Tier: query (runs over the caller's session; never begins or commits a transaction).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from ....contract import ArtifactRef
from ...store.models import Artifact, Job
from ..accounts import roles
from ..accounts.credentials import UserView

__all__ = ["ArtifactView", "inside_out_folder", "is_remote", "list_artifacts", "local_path", "register", "resolve",
           "shown_path"]

_REMOTE = re.compile(r"[a-z][a-z0-9+.-]*://\S+")


def is_remote(where: str) -> bool:
    """Return True for an artifact kept outside this machine (`s3://bucket/key` and other URLs)."""
    return _REMOTE.fullmatch(where) is not None


def inside_out_folder(path: str | Path, run_dir: str | Path) -> bool:
    """Return True when `path`, with every symbolic link resolved, lies inside `<run_dir>/out`."""
    out = os.path.realpath(os.path.join(run_dir, "out"))
    real = os.path.realpath(path)
    return real == out or real.startswith(out + os.sep)


def local_path(where: str, *, run_dir: str | Path, job_out: str) -> Path | None:
    """Return the console's path of a file a job reported (as it sees it, under `job_out`), or None when it is
    not inside the run's output folder or does not exist."""
    if not where.startswith("/"):
        relative = where
    elif where == job_out or where.startswith(job_out.rstrip("/") + "/"):
        relative = where[len(job_out.rstrip("/")) + 1:]
    else:
        return None
    if any(part == ".." for part in relative.split("/")):
        return None
    host = Path(run_dir) / "out" / relative
    if not os.path.lexists(host) or not inside_out_folder(host, run_dir):
        return None
    return Path(os.path.realpath(host))


def shown_path(path: str, *, run_dir: str | Path, job_out: str) -> str:
    """Return where a registered artifact is as its job saw it (the inverse of `local_path`): `job_out` (the job's
    output folder) joined with the artifact's place in the run's output folder; a remote URL as registered; only
    the file's name for one no longer inside the output folder."""
    if is_remote(path):
        return path
    out = os.path.realpath(os.path.join(run_dir, "out")) if run_dir else ""
    real = os.path.realpath(path)
    if out and (real == out or real.startswith(out + os.sep)):
        inside = Path(os.path.relpath(real, out)).as_posix()
        return job_out if inside == "." else f"{job_out.rstrip('/')}/{inside}"
    return os.path.basename(path.rstrip("/"))


@dataclass(frozen=True)
class ArtifactView:
    """One registered artifact of a run."""

    run_id: str
    kind: str
    path: str
    format: str
    step: int | None
    size_bytes: int | None

    def to_dict(self, *, shown: str) -> dict[str, object]:
        """Return the wire form of `GET /api/jobs/{run_id}/artifacts`, with `shown` as its path (`shown_path`)."""
        return {"kind": self.kind, "path": shown, "format": self.format, "step": self.step,
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
    if job is None or not roles.can_see_job(user, job.user_id) or not job.run_dir:
        return None
    query = select(Artifact).where(Artifact.run_id == ref.run_id, Artifact.kind == ref.kind)
    if ref.step is not None:
        query = query.where(Artifact.step == ref.step)
    rows = [r for r in db.scalars(query) if not is_remote(r.path) and inside_out_folder(r.path, job.run_dir)]
    if not rows:
        return None
    rows.sort(key=lambda r: (r.step if r.step is not None else -1, r.id))
    return _view(rows[-1])
