"""Directory digests: one SHA-256 over a tree's files (templates, plugins, declaration packs), bit-exact with sf."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["digest_files", "directory_digest"]

_SKIP_PARTS = frozenset({"__pycache__", ".git", ".venv", ".mypy_cache", ".ruff_cache"})


def _files(root: Path) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    # os.walk does not enter symlinked directories; a symlink to a file is listed and read as that file.
    for current, _dirs, names in os.walk(root):
        for name in names:
            path = Path(current, name)
            rel = path.relative_to(root).as_posix()
            if name == ".DS_Store" or name.endswith((".pyc", ".pyo")):
                continue
            if _SKIP_PARTS.intersection(rel.split("/")):
                continue
            if path.is_file():
                out.append((rel, path))
    out.sort(key=lambda item: item[0])
    return out


def digest_files(root: str | os.PathLike[str]) -> list[tuple[str, Path]]:
    """Return `(relative path, file)` for every file `directory_digest` covers, in its order (what a package of the
    tree must hold for its unpacked copy to have the same digest)."""
    return _files(Path(root))


def directory_digest(root: str | os.PathLike[str]) -> str:
    """Return `sha256:<hex>` over every file under `root`: path, NUL, bytes, NUL, in code-point path order."""
    digest = hashlib.sha256()
    for rel, path in _files(Path(root)):
        digest.update(rel.encode("utf-8"))
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return "sha256:" + digest.hexdigest()
