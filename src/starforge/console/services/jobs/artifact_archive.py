"""A run's artifact as a stream of gzip tar bytes, read beneath the run's output folder without following links.

Every path component is opened relative to the one before with `O_NOFOLLOW`, and folders are walked through
their descriptors (`os.fwalk`), so a link — even one a running job swaps in after the artifact was registered —
is never followed, inside or out of the folder: links, devices and FIFOs are left out, only regular files go in.
Members are named from the output folder (`checkpoints/step_40/weights.npz`), regular files only, no folders.

Tier: query (files only; never touches the database).
"""

from __future__ import annotations

import itertools
import os
import posixpath
import stat
import tarfile
import zlib
from collections.abc import Iterator
from pathlib import Path

from ..errors import NotFound

__all__ = ["archive_chunks", "open_beneath"]

_CHUNK = 1 << 20
_BLOCK = 512
_RECORD = 20 * _BLOCK  # tar pads its end to whole records, as `tarfile` does
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # never blocks on a FIFO; checked after
_MAX_NAME = 1024


def open_beneath(folder: Path, relative: str) -> int:
    """Return a descriptor of `folder/relative` (a regular file or a folder) opened one component at a time
    without following links; raise NotFound when it is gone, is something else, or a component is a link."""
    parts = relative.split("/")
    if not relative or any(part in ("", ".", "..") for part in parts):
        raise NotFound(f"{relative!r} is not a path inside the run's output folder")
    try:
        fd = os.open(folder, _DIR)
    except OSError as exc:
        raise NotFound("the run's output folder is gone") from exc
    try:
        for part in parts[:-1]:
            inner = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = inner
        inner = os.open(parts[-1], _FILE, dir_fd=fd)
        os.close(fd)
        fd = inner
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise NotFound(f"{relative} is no longer a file or folder of the run's output (or a link leads to it)") \
            from exc
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        os.close(fd)
        raise NotFound(f"{relative} is neither a file nor a folder")
    return fd


def _name_ok(name: str) -> bool:
    """Names a careful extractor accepts (the client unpacks with starforge.bundle's rules)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\\" not in name and len(name) <= _MAX_NAME


def _files(fd: int, name: str) -> Iterator[tuple[str, int]]:
    """Yield `(member name, descriptor)` for each regular file of the file or folder open at `fd`; the caller
    closes each descriptor."""
    if stat.S_ISREG(os.fstat(fd).st_mode):
        yield name, os.dup(fd)
        return
    for folder, dirnames, filenames, dir_fd in os.fwalk(".", dir_fd=fd, follow_symlinks=False):
        dirnames.sort()
        for leaf in sorted(filenames):
            member = posixpath.normpath(posixpath.join(name, folder, leaf))
            if not _name_ok(member):
                continue
            try:
                file_fd = os.open(leaf, _FILE, dir_fd=dir_fd)
            except OSError:
                continue  # a link (ELOOP), gone meanwhile, or unreadable: left out
            if not stat.S_ISREG(os.fstat(file_fd).st_mode):
                os.close(file_fd)
                continue
            yield member, file_fd


def _header(name: str, info: os.stat_result) -> bytes:
    member = tarfile.TarInfo(name)
    member.size = info.st_size
    member.mtime = int(info.st_mtime)
    member.mode = 0o755 if info.st_mode & 0o111 else 0o644
    member.type = tarfile.REGTYPE
    return member.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


def _file_blocks(fd: int, size: int) -> Iterator[bytes]:
    """Yield exactly `size` bytes of the file (zeros if it shrank meanwhile), then the padding to a whole block."""
    left = size
    while left:
        chunk = os.read(fd, min(_CHUNK, left)) or b"\0" * min(_CHUNK, left)
        left -= len(chunk)
        yield chunk
    if size % _BLOCK:
        yield b"\0" * (_BLOCK - size % _BLOCK)


def archive_chunks(folder: Path, relatives: tuple[str, ...]) -> Iterator[bytes]:
    """Yield the gzip tar of the files and folders `relatives` beneath `folder`, members named from `folder`.

    Each is opened before the first byte is sent (one that is gone is a NotFound, not a broken stream); no
    `relatives` gives an empty archive.
    """
    fds = [open_beneath(folder, relative) for relative in relatives]
    deflate = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # the gzip container
    written = 0
    try:
        for fd, relative in zip(fds, relatives, strict=True):
            for member, file_fd in _files(fd, relative):
                try:
                    info = os.fstat(file_fd)
                    for block in itertools.chain((_header(member, info),), _file_blocks(file_fd, info.st_size)):
                        written += len(block)
                        if out := deflate.compress(block):
                            yield out
                finally:
                    os.close(file_fd)
        end = 2 * _BLOCK
        end += (-(written + end)) % _RECORD
        yield deflate.compress(b"\0" * end) + deflate.flush()
    finally:
        for fd in fds:
            os.close(fd)
