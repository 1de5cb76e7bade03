"""A `git diff --stat` of two stored bundles: per file, lines added and removed, and files only in one of them.

Tier: query (reads the content-addressed bundle store; no database). Each bundle is unpacked with the repository's
safe reader (`bundle.extract_bundle`: every path, link and size rule checked before anything is written) into a
private temporary folder, which is removed afterwards; a bundle that is missing or refused gives no stat (None).
"""

from __future__ import annotations

import difflib
import os
import tempfile
from pathlib import Path
from typing import Any

from ....bundle import UnsafeBundle, extract_bundle
from ..jobs.bundles import bundle_path

__all__ = ["MAX_COMPARED_BYTES", "bundle_stat"]

MAX_COMPARED_BYTES = 1024 * 1024  # a larger file is reported as changed without counting its lines


def _files(root: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            out[path.relative_to(root).as_posix()] = path
    return out


def _lines(path: Path) -> list[str] | None:
    if path.stat().st_size > MAX_COMPARED_BYTES:
        return None
    data = path.read_bytes()
    if b"\x00" in data:
        return None
    return data.decode("utf-8", errors="replace").splitlines()


def _counted(a: Path, b: Path) -> dict[str, Any] | None:
    if a.read_bytes() == b.read_bytes():
        return None
    old, new = _lines(a), _lines(b)
    if old is None or new is None:
        return {"binary": True}
    added = removed = 0
    for line in difflib.unified_diff(old, new, lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return {"added": added, "removed": removed}


def _unpack(state_dir: Path, sha: str, into: Path) -> dict[str, Path] | None:
    stored = bundle_path(state_dir, sha)
    try:
        with stored.open("rb") as data:
            extract_bundle(data, into)
    except (OSError, UnsafeBundle):
        return None
    return _files(into)


def _count_lines(path: Path) -> int | None:
    lines = _lines(path)
    return None if lines is None else len(lines)


def bundle_stat(state_dir: Path, sha_a: str, sha_b: str) -> list[dict[str, Any]] | None:
    """Return `[{path, status: changed|added|removed, added, removed | binary}]` from bundle `sha_a` to `sha_b`, in
    path order; None when either bundle is not stored or not readable."""
    if not sha_a or not sha_b:
        return None
    with tempfile.TemporaryDirectory(prefix="sf-diff-") as tmp:
        files_a = _unpack(state_dir, sha_a, Path(tmp) / "a")
        files_b = _unpack(state_dir, sha_b, Path(tmp) / "b")
        if files_a is None or files_b is None:
            return None
        out: list[dict[str, Any]] = []
        for name in sorted(set(files_a) | set(files_b)):
            if name not in files_b:
                count = _count_lines(files_a[name])
                out.append({"path": name, "status": "removed", "added": 0, "removed": count or 0,
                            **({"binary": True} if count is None else {})})
            elif name not in files_a:
                count = _count_lines(files_b[name])
                out.append({"path": name, "status": "added", "added": count or 0, "removed": 0,
                            **({"binary": True} if count is None else {})})
            else:
                changed = _counted(files_a[name], files_b[name])
                if changed is not None:
                    out.append({"path": name, "status": "changed", "added": 0, "removed": 0, **changed})
        return out
