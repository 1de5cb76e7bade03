"""Downloading a run's artifact: a registered file or folder inside the run's output folder, as a gzip tar.

Only the run's owner (or an administrator) may download, and only what the run registered (`GET
/api/jobs/{ref}/artifacts`), named by its registered path or by its path inside the output folder; remote
artifacts (`s3://…`) are not held by the console. The registration rule is checked again (links resolved, the
path still inside the run's output folder), and the bytes are read without following any link
(`artifact_archive`).

Tier: use case (one read transaction to find the artifact; the archive streams after it, from the files).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..accounts.credentials import UserView
from ..context import Runtime
from ..errors import NotFound
from ..registries import artifacts
from . import artifact_archive
from . import queries as job_queries

__all__ = ["ArtifactDownload", "open_download"]


@dataclass(frozen=True)
class ArtifactDownload:
    """Artifacts ready to stream: their output folder, their paths inside it, and a file name for the archive."""

    out: Path
    relatives: tuple[str, ...]
    filename: str

    def chunks(self) -> Iterator[bytes]:
        """Yield the gzip tar (blocking reads: iterate it in the threadpool)."""
        return artifact_archive.archive_chunks(self.out, self.relatives)


def open_download(rt: Runtime, *, user: UserView, ref: str, path: str) -> ArtifactDownload:
    """Return the download of the artifact of run `ref` that `path` names (its path as listed, which is where its
    job saw it, or its path inside the run's output folder), or of every artifact the console holds when `path` is empty (none yet: an empty
    archive); NotFound for a run the caller may not see, an unknown or remote artifact, or one that is no longer a
    file or folder inside the output folder."""
    with rt.db.read() as db:
        job = job_queries.find_job(db, user, ref)
        run_dir, run_id, executor_ref = job.run_dir, job.id, job.executor_ref
        registered = artifacts.list_artifacts(db, run_id)
    hint = f"`sf job artifacts {run_id}` lists the run's artifacts"
    if not path:
        return _everything(run_id, run_dir, registered)
    if not run_dir:
        raise NotFound(f"run {run_id} has not started, so it has no artifacts; {hint}")
    out = Path(os.path.realpath(Path(run_dir) / "out"))
    job_out = rt.job_paths(Path(run_dir), executor_ref).out
    for artifact, relative in _held_here(registered, run_dir, out):
        if path in (f"{job_out}/{relative}", relative, artifact.path):  # as listed, inside the output folder
            os.close(artifact_archive.open_beneath(out, relative))  # gone or swapped for a link: 404 now, not mid-stream
            name = re.sub(r"[^A-Za-z0-9._-]", "_", relative.replace("/", "-"))[:120]  # a safe header value
            return ArtifactDownload(out, (relative,), f"{run_id}-{name}.tar.gz")
    remote = next((a.path for a in registered if a.path == path and artifacts.is_remote(a.path)), None)
    if remote is not None:
        raise NotFound(f"{remote} is kept outside this console; fetch it from there")
    raise NotFound(f"run {run_id} registered no artifact {path[:300]!r} that lies in its output folder; {hint}")


def _everything(run_id: str, run_dir: str, registered: list[artifacts.ArtifactView]) -> ArtifactDownload:
    """Return the download of every local artifact of a run, outermost folders only (a checkpoint inside a
    registered folder is sent once)."""
    if not run_dir:
        return ArtifactDownload(Path(), (), f"{run_id}-artifacts.tar.gz")
    out = Path(os.path.realpath(Path(run_dir) / "out"))
    # a rotated-away checkpoint is left out, not a 404
    found = [relative for _artifact, relative in _held_here(registered, run_dir, out) if _still_there(out, relative)]
    kept = [r for r in sorted(set(found)) if not any(r.startswith(f"{o}/") for o in found)]
    return ArtifactDownload(out, tuple(kept), f"{run_id}-artifacts.tar.gz")


def _held_here(registered: list[artifacts.ArtifactView], run_dir: str,
               out: Path) -> Iterator[tuple[artifacts.ArtifactView, str]]:
    """Yield each artifact the console holds (not remote, inside the run's output folder, not the folder itself)
    with its path inside the output folder."""
    for artifact in registered:
        if artifacts.is_remote(artifact.path) or not artifacts.inside_out_folder(artifact.path, run_dir):
            continue
        relative = Path(os.path.realpath(artifact.path)).relative_to(out).as_posix()
        if relative != ".":
            yield artifact, relative


def _still_there(out: Path, relative: str) -> bool:
    """Return True when `relative` is still a file or folder of the output folder, reached without a link."""
    try:
        os.close(artifact_archive.open_beneath(out, relative))
    except NotFound:
        return False
    return True
