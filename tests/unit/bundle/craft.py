"""Hand-made tar.gz bundles for the hostile-bundle tests, built with `tarfile` member by member."""

from __future__ import annotations

import gzip
import io
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Entry", "craft", "gz", "snapshot"]


@dataclass(frozen=True)
class Entry:
    """One member to write: a name, a tar type, data for files, a link target for links."""

    name: str
    data: bytes = b""
    type: bytes = tarfile.REGTYPE
    linkname: str = ""
    mode: int = 0o644
    extra: dict[str, str] = field(default_factory=dict)


def craft(entries: list[Entry], *, fmt: int = tarfile.PAX_FORMAT) -> bytes:
    """Return the uncompressed tar of `entries`, exactly as listed (no name checks at all)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as tar:
        for entry in entries:
            info = tarfile.TarInfo(entry.name)
            info.type = entry.type
            info.mode = entry.mode
            info.linkname = entry.linkname
            info.pax_headers = dict(entry.extra)
            if entry.type in (tarfile.REGTYPE, tarfile.AREGTYPE):
                info.size = len(entry.data)
                tar.addfile(info, io.BytesIO(entry.data))
            else:
                tar.addfile(info)
    return buffer.getvalue()


def gz(raw: bytes) -> bytes:
    """Return `raw` gzip-compressed (fast level, mtime 0)."""
    return gzip.compress(raw, compresslevel=1, mtime=0)


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Return every path under `root` with its content (files), link target (links) or "dir"."""
    out: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = "link:" + str(path.readlink())
        elif path.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = path.read_bytes()
    return out
