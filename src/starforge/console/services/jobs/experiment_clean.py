"""Cleaning an experiment (`sf clean EXP`, `POST /api/clean?exp=`): delete the run folders (checkpoints, exports,
work copy and logs) of the caller's finished jobs of one experiment, and forget the artifacts that lived there.

Tier: use case (one read transaction to choose the runs, the deletions on disk, then one write transaction). The job
rows stay as history: each cleaned row records `cleaned_at` in its meta, and its artifacts on this machine are
removed from the registry, so listings and downloads no longer offer them (artifacts at remote URLs stay). Active
jobs are skipped and named in the answer, and so is a finished run whose follow-up is still active (that follow-up
starts from its checkpoint). A run folder is deleted only when it is a real directory inside
`<state>/runs/<owner>/`; symbolic links inside it are removed, never followed.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ....contract import Problem
from ...store.models import Artifact, Job
from ..accounts import roles
from ..accounts.credentials import UserView
from ..context import Runtime
from ..errors import Forbidden, NotFound, Rejected
from ..registries.artifacts import is_remote
from .queries import MAX_LIST_LIMIT, JobFilter, visible_jobs
from .rows import TERMINAL

__all__ = ["Removed", "clean_experiment", "remove_run_folder"]


@dataclass
class Removed:
    """What deleting one run folder did: files (symbolic links count as files) and bytes removed, and the paths
    it could not remove."""

    files: int = 0
    bytes: int = 0
    errors: list[str] = field(default_factory=list)


def remove_run_folder(run_dir: Path, runs_root: Path) -> Removed:
    """Delete `run_dir` and everything in it when it is a real directory inside `runs_root`, without following any
    symbolic link; return what was removed (nothing when it is absent, a link, or outside `runs_root`)."""
    done = Removed()
    root = os.path.realpath(runs_root)
    if (not run_dir.is_dir() or run_dir.is_symlink()
            or not os.path.realpath(run_dir).startswith(root + os.sep)):
        return done
    for folder, dirs, files in os.walk(run_dir, followlinks=False):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            try:
                done.bytes += os.lstat(os.path.join(folder, name)).st_size
                done.files += 1
            except OSError:
                continue

    def failed(_function: Any, path: str, exc: BaseException) -> None:  # named inside the run, never on this machine
        inside = os.path.relpath(path, run_dir)
        done.errors.append(f"{run_dir.name}/{inside}: {exc.strerror or type(exc).__name__}"
                           if isinstance(exc, OSError) else f"{run_dir.name}/{inside}: {exc}")

    if sys.version_info >= (3, 12):
        shutil.rmtree(run_dir, onexc=failed)
    else:  # onerror is deprecated from 3.12 on
        shutil.rmtree(run_dir, onerror=lambda function, path, info: failed(function, path, info[1]))
    return done


def _runs_with_active_children(db: Session, jobs: list[Job]) -> set[str]:
    """Return the runs among `jobs` that an unfinished job starts from: a follow-up, or a service serving it (whose
    experiment is another one)."""
    ids = [j.id for j in jobs]
    return set(db.scalars(select(Job.parent_id).where(Job.parent_id.in_(ids), Job.status.not_in(TERMINAL))))


def clean_experiment(rt: Runtime, *, user: UserView, exp: str) -> dict[str, Any]:
    """Delete the run folders of the caller's finished jobs of experiment `exp` (its path or last part) and answer
    `{job_id, exp, cleaned, skipped, files, bytes, message}`; an experiment with no job of the caller is a 404."""
    wanted = (exp or "").strip().strip("/")
    if not wanted:
        raise Rejected("Invalid request", [Problem("exp", "invalid_request", "exp must name an experiment",
                                                   "e.g. `sf clean my-grpo`")], status=422)
    if not roles.can_submit(user):
        raise Forbidden("viewers cannot clean experiments")
    with rt.db.read() as db:
        jobs = visible_jobs(db, user, limit=MAX_LIST_LIMIT, where=JobFilter(exp=wanted))
        rows = [(j.id, j.status, j.run_dir, j.parent_id) for j in jobs]
        busy = _runs_with_active_children(db, jobs)
    if not rows:
        raise NotFound(f"no job of experiment {wanted!r} of yours (see `sf job ls --exp {wanted}`)")
    runs_root = rt.settings.state_dir / "runs" / user.username
    cleaned: list[str] = []
    skipped: list[dict[str, str]] = []
    total = Removed()
    for job_id, status, run_dir, _parent in rows:
        if status not in TERMINAL:
            skipped.append({"job_ref": job_id, "status": status, "reason": "still active"})
            continue
        if job_id in busy:
            skipped.append({"job_ref": job_id, "status": status, "reason": "a follow-up or a service of it is still active"})
            continue
        removed = remove_run_folder(Path(run_dir), runs_root) if run_dir else Removed()
        total.files, total.bytes = total.files + removed.files, total.bytes + removed.bytes
        total.errors += removed.errors
        cleaned.append(job_id)
    _forget(rt, cleaned)
    message = f"deleted {total.files} files ({total.bytes} bytes) of {len(cleaned)} finished jobs"
    if skipped:
        message += f"; skipped {len(skipped)} active"
    answer: dict[str, Any] = {"job_id": "", "exp": wanted, "cleaned": cleaned, "skipped": skipped,
                              "files": total.files, "bytes": total.bytes, "message": message}
    if total.errors:
        answer["errors"] = total.errors[:20]
    return answer


def _forget(rt: Runtime, cleaned: list[str]) -> None:
    """Remove the cleaned runs' local artifacts from the registry and mark their rows `cleaned_at`."""
    if not cleaned:
        return
    now = time.time()
    with rt.db.write() as db:
        for row in db.scalars(select(Artifact).where(Artifact.run_id.in_(cleaned))):
            if not is_remote(row.path):
                db.delete(row)
        for job in db.scalars(select(Job).where(Job.id.in_(cleaned))):
            meta = json.loads(job.meta_json or "{}")
            meta["cleaned_at"] = now
            job.meta_json = json.dumps(meta, ensure_ascii=False)
