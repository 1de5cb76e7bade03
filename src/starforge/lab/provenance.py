"""Provenance of a submission (jobspec-contract §14): the HEAD commit, the dirty flag and the config hash."""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GitProvenance", "ProvenanceError", "config_sha", "git_provenance", "lab_dirtied_by"]


class ProvenanceError(RuntimeError):
    """Raised when the lab's git state cannot be read: no git, not a repository, or no commit yet."""


@dataclass(frozen=True, slots=True)
class GitProvenance:
    """What a job records about its source: abbreviated commit, dirty flag, and the config hash (or `none`);
    `changes` lists what makes the tree dirty, as `(state, path)` pairs (`modified`, `untracked`…; paths from the
    repository root, an untracked folder once with a trailing `/`)."""

    git_commit: str
    git_dirty: bool
    config_sha: str
    changes: tuple[tuple[str, str], ...] = ()

    def to_meta(self) -> dict[str, object]:
        """Return the `X-Forge-Meta` fields `git_commit`, `git_dirty`, `config_sha`."""
        return {"git_commit": self.git_commit, "git_dirty": self.git_dirty, "config_sha": self.config_sha}


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"}
    try:
        return subprocess.run(
            ["git", *args], cwd=root, env=env, capture_output=True, text=True, encoding="utf-8", errors="replace"
        )
    except FileNotFoundError as exc:
        raise ProvenanceError("git is not installed: StarForge records the commit every job runs from") from exc


def config_sha(root: Path, exp: str) -> str:
    """Return the first 12 hex characters of SHA-256 over `<root>/<exp>/config.yaml`, or `none` without one."""
    try:
        data = (Path(root) / exp / "config.yaml").read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return "none"
    return hashlib.sha256(data).hexdigest()[:12]


def git_provenance(root: Path, exp: str) -> GitProvenance:
    """Return the provenance of experiment `exp` in the lab at `root`; raise `ProvenanceError` without a commit."""
    root = Path(root)
    inside = _git(root, "rev-parse", "--is-inside-work-tree")
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        raise ProvenanceError(
            f"{root} is not inside a git repository: run `git init` and commit your lab before submitting"
        )
    head = _git(root, "rev-parse", "--short", "HEAD")
    if head.returncode != 0 or not head.stdout.strip():
        raise ProvenanceError(
            f"the git repository at {root} has no commit yet: commit your lab first (git add -A && git commit)"
        )
    status = _git(root, "status", "--porcelain=v1", "-z")
    if status.returncode != 0:
        raise ProvenanceError(f"`git status` failed in {root}: {status.stderr.strip()}")
    changes = _changes(status.stdout)
    return GitProvenance(head.stdout.strip(), bool(changes), config_sha(root, exp), changes)


_STATES = {"?": "untracked", "M": "modified", "A": "added", "D": "deleted", "R": "renamed", "C": "copied",
           "T": "type changed", "U": "unmerged"}


def _changes(porcelain: str) -> tuple[tuple[str, str], ...]:
    """Return `(state, path)` for each entry of `git status --porcelain=v1 -z` (a rename's source is skipped)."""
    records = iter(porcelain.split("\0"))
    found: list[tuple[str, str]] = []
    for record in records:
        if len(record) < 4:
            continue
        xy, path = record[:2], record[3:]
        if xy[0] in "RC":
            next(records, None)  # the path it was renamed or copied from
        letter = next((c for c in xy if c != " "), "?")
        found.append((_STATES.get(letter, "changed"), path))
    return tuple(found)


def lab_dirtied_by(folder: Path) -> Path | None:
    """Return the root of the lab whose git tree files written under `folder` would make dirty (the folder is in
    the lab and git does not ignore it), else None: outside a lab, ignored, or git unavailable."""
    from .discovery import find_root_or_none

    target = Path(folder).expanduser().resolve()
    existing = next((p for p in (target, *target.parents) if p.is_dir()), None)
    root = find_root_or_none(existing) if existing is not None else None
    if root is None or not target.is_relative_to(root):
        return None
    try:
        ignored = _git(root, "check-ignore", "-q", str(target / "file"))
    except ProvenanceError:
        return None
    return root if ignored.returncode == 1 else None  # 0: ignored; 128: not a repository (or git failed)
