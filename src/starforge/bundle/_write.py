"""Bundle writing: a deterministic gzip-compressed tar of the given files, in the given order."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import posixpath
import stat
import tarfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ._limits import BundleLimits
from ._paths import path_problem

__all__ = ["BundleFile", "BundleInfo", "Progress", "needs_lf", "pack_bytes", "write_bundle"]

Progress = Callable[[int], None]

# Fixed so that identical input gives identical bytes; 6 is zlib's own balance of speed and size.
_COMPRESSLEVEL = 6
_LF_SUFFIXES = (".sh", ".conf")
_MAX_PATH_LEN = BundleLimits().max_path_len


@dataclass(frozen=True, slots=True)
class BundleFile:
    """One bundle member: its path inside the bundle and where its bytes come from (a file or the bytes)."""

    arcname: str
    source: Path | bytes


@dataclass(frozen=True, slots=True)
class BundleInfo:
    """What `write_bundle` produced: member count, compressed byte count and `sha256:<hex>` of those bytes."""

    files: int
    bytes: int
    sha256: str


def needs_lf(arcname: str) -> bool:
    """Return True when the member gets CRLF converted to LF: a file named `sf` or ending in `.sh` or `.conf`."""
    base = posixpath.basename(arcname)
    return base == "sf" or base.endswith(_LF_SUFFIXES)


class _Counter:
    """A write-only stream forwarding to `out` while counting and hashing the bytes, and reporting progress."""

    def __init__(self, out: BinaryIO, progress: Progress | None) -> None:
        self._out = out
        self._progress = progress
        self.count = 0
        self.digest = hashlib.sha256()

    def write(self, data: bytes) -> int:
        if not data:
            return 0
        self._out.write(data)
        self.count += len(data)
        self.digest.update(data)
        if self._progress is not None:
            self._progress(self.count)
        return len(data)

    def flush(self) -> None:
        self._out.flush()


def _member(arcname: str, size: int, executable: bool) -> tarfile.TarInfo:
    info = tarfile.TarInfo(arcname)
    info.size = size
    info.mtime = 0
    info.mode = 0o755 if executable else 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info


def _add(tar: tarfile.TarFile, item: BundleFile, crlf_to_lf: bool) -> None:
    convert = crlf_to_lf and needs_lf(item.arcname)
    if isinstance(item.source, (bytes, bytearray, memoryview)):
        data = bytes(item.source)
        if convert:
            data = data.replace(b"\r\n", b"\n")
        tar.addfile(_member(item.arcname, len(data), False), io.BytesIO(data))
        return
    with open(item.source, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"bundle member {item.arcname!r}: {item.source} is not a regular file")
        executable = bool(info.st_mode & 0o111)
        if convert:
            data = handle.read().replace(b"\r\n", b"\n")
            tar.addfile(_member(item.arcname, len(data), executable), io.BytesIO(data))
        else:
            tar.addfile(_member(item.arcname, info.st_size, executable), handle)


def write_bundle(
    files: Iterable[BundleFile],
    out: BinaryIO,
    *,
    progress: Progress | None = None,
    crlf_to_lf: bool = True,
) -> BundleInfo:
    """Write `files` to `out` as a deterministic gzip tar and return what was written.

    Members keep the given order, carry no directory entries, mtime 0, owner 0/"" and mode 0644 (0755 for an
    executable source file); the gzip header has mtime 0 and no file name. With `crlf_to_lf`, files named `sf`
    or ending in `.sh`/`.conf` have CRLF turned into LF. `progress`, when given, is called with the number of
    compressed bytes written so far. An arcname the console would refuse, or a repeated one, raises ValueError.
    """
    counter = _Counter(out, progress)
    seen: set[str] = set()
    count = 0
    with (
        gzip.GzipFile(filename="", mode="wb", compresslevel=_COMPRESSLEVEL, fileobj=counter, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for item in files:
            reason = path_problem(item.arcname, _MAX_PATH_LEN)
            if reason is not None:
                raise ValueError(f"bundle member {item.arcname!r} {reason}")
            if item.arcname in seen:
                raise ValueError(f"bundle member {item.arcname!r} is given twice")
            seen.add(item.arcname)
            _add(tar, item, crlf_to_lf)
            count += 1
    return BundleInfo(files=count, bytes=counter.count, sha256="sha256:" + counter.digest.hexdigest())


def pack_bytes(
    files: Iterable[BundleFile], *, progress: Progress | None = None, crlf_to_lf: bool = True
) -> tuple[bytes, BundleInfo]:
    """Return the bundle of `files` built in memory, with its `BundleInfo` (see `write_bundle`)."""
    buffer = io.BytesIO()
    info = write_bundle(files, buffer, progress=progress, crlf_to_lf=crlf_to_lf)
    return buffer.getvalue(), info
