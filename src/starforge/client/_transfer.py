"""Files to and from a console: a local file or folder packed as a gzip tar (dataset push), and an artifact's
gzip tar unpacked as hostile input (`starforge.bundle`'s extraction: no link, device, traversal or overwrite).

Packing takes regular files only and refuses anything else it meets (a link, a FIFO, a device), so what is pushed
is exactly what the user sees; a single file is stored under its own name.
"""

from __future__ import annotations

import os
import stat
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO, cast

from ..bundle import BundleLimits, UnsafeBundle, extract_bundle
from ._errors import ConsoleError

__all__ = ["Packed", "file_chunks", "pack_path", "unpack_archive"]

_CHUNK = 1 << 20
_GiB = 1024**3
# What a download may unpack to on this machine: generous, but an archive bomb still stops.
DOWNLOAD_LIMITS = BundleLimits(max_bytes=256 * _GiB, max_files=1_000_000, max_file_bytes=256 * _GiB,
                               max_total_bytes=1024 * _GiB, max_ratio=1000.0)


@dataclass
class Packed:
    """A packed upload: the open temporary file (rewound), its size, and how many files and bytes it holds."""

    handle: IO[bytes]
    size: int
    files: int
    total_bytes: int


def _members(path: Path) -> Iterator[tuple[Path, str]]:
    if path.is_file() and not path.is_symlink():
        yield path, path.name
        return
    for folder, dirs, files in os.walk(path, followlinks=False):
        dirs.sort()
        for name in sorted(dirs) + sorted(files):
            full = Path(folder) / name
            mode = os.lstat(full).st_mode
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                raise ConsoleError(f"{full} is not a regular file (a link, FIFO or device); nothing was pushed",
                                   hint="replace links with the files they point to, or push another folder")
            yield full, full.relative_to(path).as_posix()


def pack_path(path: Path) -> Packed:
    """Pack the file or folder `path` into a temporary gzip tar (deleted when its handle closes)."""
    path = Path(path)
    if path.is_symlink() or not (path.is_file() or path.is_dir()):
        raise ConsoleError(f"{path} is neither a file nor a folder", hint="push a data file or a folder of files")
    handle = tempfile.TemporaryFile()  # noqa: SIM115 - returned open; the caller closes it
    files = total = 0
    try:
        with tarfile.open(fileobj=handle, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
            for full, name in _members(path):
                info = tar.gettarinfo(str(full), arcname=name)
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                with full.open("rb") as source:
                    tar.addfile(info, source)
                files += 1
                total += info.size
        size = handle.tell()
        handle.seek(0)
    except BaseException:
        handle.close()
        raise
    if files == 0:
        handle.close()
        raise ConsoleError(f"{path} holds no file; nothing was pushed", hint="push a file, or a folder with files")
    return Packed(handle, size, files, total)


def file_chunks(handle: IO[bytes]) -> Iterator[bytes]:
    """Yield the rest of an open file in 1 MiB chunks (an httpx request body that never sits in memory)."""
    while chunk := handle.read(_CHUNK):
        yield chunk


def unpack_archive(archive: IO[bytes], dest: Path) -> list[str]:
    """Unpack a gzip tar downloaded from a console under `dest` (created) and return the file names written;
    an unsafe archive raises ConsoleError and writes nothing."""
    try:
        return extract_bundle(cast(BinaryIO, archive), Path(dest), DOWNLOAD_LIMITS, skip_prefixes=())
    except UnsafeBundle as exc:
        raise ConsoleError("the downloaded archive was refused: " + "; ".join(p.message for p in exc.problems),
                           hint="the console sent something other than the artifact's files") from exc
