"""Where pushed datasets, corpora and models live in the state folder, and how an upload becomes one: unpacked as
hostile input, then moved into place whole.

    <state>/datasets/<owner>/<name>/<version>/          the files, read-only to jobs (mounted, never named)
    <state>/datasets/_index/<owner>/<name>/<version>.json   {"files", "total_bytes", "description"?}: what the
                                                        listings show
    <state>/datasets/_incoming/<random>/                an upload being unpacked (removed whatever happens)
    <state>/corpora/…, <state>/models/…                 the same layout for pushed corpora and models

Owners are safe segments, which never start with `_`, so the two service folders cannot collide with a namespace.

Tier: query (files only; the use case `dataset_push` owns the transaction around `install`).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ....bundle import BundleLimits, extract_bundle
from ....contract import VersionedRef

__all__ = ["PUSH_KINDS", "Staged", "data_dir", "discard", "install", "list_files", "read_index", "unpack",
           "write_index"]

_ROOT = "datasets"
_ROOTS = {"dataset": _ROOT, "corpus": "corpora", "model": "models"}
PUSH_KINDS = tuple(_ROOTS)  # the kinds of asset users push (volumes and environments are registered by operators)


@dataclass(frozen=True)
class Staged:
    """An unpacked upload waiting to be installed: its folder, file count and total size."""

    path: Path
    files: int
    total_bytes: int


def data_dir(state_dir: Path, ref: VersionedRef, kind: str = "dataset") -> Path:
    """Return the folder of a pushed version of `kind` (one of PUSH_KINDS)."""
    return state_dir / _ROOTS[kind] / ref.owner / ref.name / ref.version


def _index_file(state_dir: Path, ref: VersionedRef, kind: str) -> Path:
    return state_dir / _ROOTS[kind] / "_index" / ref.owner / ref.name / f"{ref.version}.json"


def _open_to_all(root: Path) -> None:
    """Make folders 0755 whatever the console's umask: jobs may run as other users and must read the files."""
    os.chmod(root, 0o755)
    for folder, dirs, _files in os.walk(root):
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o755, follow_symlinks=False)


def unpack(state_dir: Path, archive: BinaryIO, limits: BundleLimits) -> Staged:
    """Unpack a gzip tar into a fresh folder with the bundle's safe extraction (paths, links, devices, counts,
    sizes and expansion checked before anything is written); raise UnsafeBundle, leaving nothing behind."""
    incoming = state_dir / _ROOT / "_incoming"
    incoming.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=incoming))
    try:
        names = extract_bundle(archive, staging, limits, skip_prefixes=())
        total = sum(os.lstat(staging / name).st_size for name in names)
        _open_to_all(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Staged(staging, len(names), total)


def discard(path: Path) -> None:
    """Remove a staged or installed folder (nothing when it is gone)."""
    shutil.rmtree(path, ignore_errors=True)


def install(state_dir: Path, staged: Staged, ref: VersionedRef, kind: str = "dataset") -> Path:
    """Move a staged upload to its version's folder and return it. Call it once the version's row is written in
    the caller's transaction: whatever sits there then is the leftover of an interrupted push, and is replaced."""
    target = data_dir(state_dir, ref, kind)
    target.parent.mkdir(parents=True, exist_ok=True)
    if os.path.lexists(target):
        leftover = staged.path.parent / f"leftover-{uuid.uuid4().hex}"
        os.rename(target, leftover)
        discard(leftover)
    os.rename(staged.path, target)
    return target


def write_index(state_dir: Path, ref: VersionedRef, staged: Staged, kind: str = "dataset",
                description: str = "") -> None:
    """Record a pushed version's file count, size and description beside the data (the data folder holds only the
    data)."""
    path = _index_file(state_dir, ref, kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    index: dict[str, Any] = {"files": staged.files, "total_bytes": staged.total_bytes}
    if description:
        index["description"] = description
    path.write_text(json.dumps(index), encoding="utf-8")


def list_files(folder: Path, limit: int = 10_000) -> tuple[list[dict[str, Any]], bool]:
    """Return `[{name, size}]` for the regular files under `folder` (names relative, sorted; links never followed
    nor listed) and whether the listing stopped at `limit`."""
    found: list[dict[str, Any]] = []
    for parent, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        for leaf in sorted(files):
            path = os.path.join(parent, leaf)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            if len(found) >= limit:
                return found, True
            found.append({"name": Path(path).relative_to(folder).as_posix(), "size": info.st_size})
    return found, False


def read_index(state_dir: Path, ref: VersionedRef, kind: str = "dataset") -> dict[str, Any]:
    """Return a pushed version's `{files, total_bytes, description?}`, or `{}` for a registered folder or an
    unreadable index."""
    try:
        value = json.loads(_index_file(state_dir, ref, kind).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(value, dict):
        return {}
    found = {k: v for k, v in value.items() if k in ("files", "total_bytes") and isinstance(v, int)
             and not isinstance(v, bool)}
    if isinstance(value.get("description"), str) and value["description"]:
        found["description"] = value["description"]
    return found
