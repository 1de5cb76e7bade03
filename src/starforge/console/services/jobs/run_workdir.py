"""A running job's prepared work folder (the bundle, `.starforge/launch.json`, `.starforge/jobspec.json`) as a gzip
tar, for engines whose nodes do not share the console's disk (a KubeRay submitter fetches it before `ray job submit`).

Only the run's own token opens it, only while the run is placed or running (its token is revoked when it ends), and
the files are read without following any link (`artifact_archive`), so a job cannot plant a path out of its folder.

Tier: use case (one read transaction to check the token and find the run; the archive streams after it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from ...store.models import Job
from ..accounts import credentials as accounts
from ..context import Runtime
from ..errors import NotFound
from . import artifact_archive
from .rows import ACTIVE

__all__ = ["workdir_chunks"]


def workdir_chunks(rt: Runtime, run_id: str, token: str) -> Iterator[bytes]:
    """Return the gzip tar of the run's work folder, members named from inside it; raise AuthRequired or NotFound."""
    with rt.db.read() as db:
        accounts.authenticate_run(db, token, run_id)  # raises AuthRequired: not this run's live token
        job = db.get(Job, run_id)
        if job is None or job.status not in ACTIVE or not job.run_dir:
            raise NotFound(f"run {run_id} has no prepared work folder (it is not placed or running)")
        work = Path(job.run_dir) / "work"
    try:
        names = tuple(sorted(entry.name for entry in os.scandir(work)  # links and special files are left out
                             if entry.is_dir(follow_symlinks=False) or entry.is_file(follow_symlinks=False)))
    except OSError as exc:
        raise NotFound(f"run {run_id} has no prepared work folder") from exc
    return artifact_archive.archive_chunks(work, names)
