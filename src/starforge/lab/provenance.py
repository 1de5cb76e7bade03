"""Provenance of a submission (jobspec-contract §14): the HEAD commit, the dirty flag and the config hash."""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GitProvenance", "ProvenanceError", "config_sha", "git_provenance"]


class ProvenanceError(RuntimeError):
    """Raised when the lab's git state cannot be read: no git, not a repository, or no commit yet."""


@dataclass(frozen=True, slots=True)
class GitProvenance:
    """What a job records about its source: abbreviated commit, dirty flag, and the config hash (or `none`)."""

    git_commit: str
    git_dirty: bool
    config_sha: str

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
    status = _git(root, "status", "--porcelain")
    if status.returncode != 0:
        raise ProvenanceError(f"`git status` failed in {root}: {status.stderr.strip()}")
    return GitProvenance(head.stdout.strip(), bool(status.stdout.strip()), config_sha(root, exp))
