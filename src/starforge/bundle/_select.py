"""Bundle selection: the files of an experiment that go into its bundle, per wire-protocol §7.2."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from ._limits import BundleLimits
from ._paths import path_problem
from ._secrets import SecretFinding, find_secret

__all__ = ["SHARED_ROOTS", "GitListingError", "Selection", "select_files"]

SHARED_ROOTS = ("common/", "configs/")
_MAX_PATH_LEN = BundleLimits().max_path_len


class GitListingError(RuntimeError):
    """Raised when `git ls-files` cannot list the repository (git missing, not a work tree)."""


@dataclass(frozen=True, slots=True)
class Selection:
    """The outcome of a selection, each list in git's listing order, as repo-relative POSIX paths.

    `files` go into the bundle. `refused` must stop the upload: files that look like secrets (by name or
    content; `secrets` says why for each) and names the console would refuse (backslash, not UTF-8, too long).
    `dropped` are left out on purpose: `*.pdf`, and entries that are not regular files (submodules, nested
    repositories, links to directories or to outside the repo). `allowed` are the secret-looking files that
    are in `files` because the caller allowed them by exact path.
    """

    files: list[str]
    refused: list[str]
    dropped: list[str]
    secrets: dict[str, SecretFinding] = field(default_factory=dict)
    allowed: list[str] = field(default_factory=list)


def _git_listing(repo: Path, roots: tuple[str, ...]) -> list[str]:
    command = [
        "git",
        "--literal-pathspecs",
        "ls-files",
        "-z",
        "--cached",
        "--others",
        "--exclude-standard",
        "--",
        *roots,
    ]
    try:
        done = subprocess.run(command, cwd=repo, capture_output=True, check=False)
    except OSError as error:
        raise GitListingError(f"cannot run git in {repo}: {error}") from error
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()
        raise GitListingError(f"git ls-files failed in {repo}: {message}")
    listed: list[str] = []
    seen: set[str] = set()
    for raw in done.stdout.split(b"\0"):
        path = os.fsdecode(raw)
        if path and path not in seen:
            seen.add(path)
            listed.append(path)
    return listed


def _is_packable(repo_real: Path, full: Path) -> bool:
    if full.is_symlink():
        target = full.resolve()
        return target.is_file() and target.is_relative_to(repo_real)
    return full.is_file()


def select_files(repo: Path, exp: str, *, allow_secrets: Collection[str] = ()) -> Selection:
    """Return the bundle files of experiment `exp` in `repo`: git's tracked and unignored files under
    `<exp>/`, `common/` and `configs/`, in listing order, with secrets refused and PDFs dropped.

    A file looks like a secret by its name, its symlink target's name, or its content (`find_secret`); the
    repo-relative paths in `allow_secrets` are exempt, by exact match only. Tracked files deleted from the work
    tree are skipped. A symlink is packed (as its target's content) only when it resolves to a regular file
    inside the repository. `exp` must be a relative path inside the repository (ValueError otherwise); a
    failing git raises `GitListingError`.
    """
    exp = exp.rstrip("/")
    reason = path_problem(exp, _MAX_PATH_LEN)
    if reason is not None:
        raise ValueError(f"experiment path {exp!r} {reason}")
    roots = (f"{exp}/", *SHARED_ROOTS)
    repo_real = repo.resolve()
    exempt = frozenset(allow_secrets)
    selection = Selection(files=[], refused=[], dropped=[])
    for path in _git_listing(repo, roots):
        if not path.startswith(roots):
            continue
        full = repo / path
        if not os.path.lexists(full):
            continue
        if path_problem(path, _MAX_PATH_LEN) is not None:
            selection.refused.append(path)
            continue
        packable = not path.lower().endswith(".pdf") and _is_packable(repo_real, full)
        finding = find_secret(path, full if packable else None)
        if finding is not None and path not in exempt:
            selection.refused.append(path)
            selection.secrets[path] = finding
        elif not packable:
            selection.dropped.append(path)
        else:
            selection.files.append(path)
            if finding is not None:
                selection.allowed.append(path)
    return selection
