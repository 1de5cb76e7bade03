"""Bundle extraction: inspect first, then write regular files only, never outside the destination."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from ._limits import BundleLimits
from ._problems import UnsafeBundle, show, unsafe
from ._scan import scan_source
from ._source import open_source

__all__ = ["DEFAULT_SKIP_PREFIXES", "extract_bundle"]

DEFAULT_SKIP_PREFIXES = (".starforge/",)

_HINT_WAY = "Extract into an empty directory; member names must not differ only by case on this filesystem."
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_READ = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class _InTheWay(Exception):
    """Raised when a member cannot be written because something already occupies its path."""


class _Disk:
    """The extraction sink: files under `root`, created exclusively, through real directories only."""

    def __init__(self, root: Path, skip_prefixes: tuple[str, ...]) -> None:
        self._root = root
        self._root_text = str(root)
        self._skip = skip_prefixes
        self._written: dict[str, Path] = {}
        self.names: list[str] = []

    def _skipped(self, name: str) -> bool:
        return any(name.startswith(prefix) or name == prefix.rstrip("/") for prefix in self._skip)

    def _inside(self, path: Path) -> bool:
        real = os.path.realpath(path)
        return real == self._root_text or real.startswith(self._root_text.rstrip(os.sep) + os.sep)

    def _prepare(self, name: str) -> Path:
        current = self._root
        *parents, leaf = name.split("/")
        for part in parents:
            current = current / part
            with contextlib.suppress(FileExistsError):
                os.mkdir(current, 0o755)
            # Never walk through a symlink, even one that was in the destination before us.
            if not stat.S_ISDIR(os.lstat(current).st_mode):
                raise _InTheWay(
                    f"{show(name)}: {show(str(current.relative_to(self._root)))} is not a directory"
                )
        if not self._inside(current):
            raise _InTheWay(f"{show(name)} would be written outside the destination")
        return current / leaf

    def _create(self, path: Path, name: str, executable: bool) -> BinaryIO:
        try:
            fd = os.open(path, _CREATE, 0o600)
        except FileExistsError:
            raise _InTheWay(f"{show(name)} already exists in the destination") from None
        os.fchmod(fd, 0o755 if executable else 0o644)
        return os.fdopen(fd, "wb")

    def file(self, name: str, executable: bool, chunks: Iterator[bytes]) -> None:
        if self._skipped(name):
            return
        path = self._prepare(name)
        with self._create(path, name, executable) as out:
            for chunk in chunks:
                out.write(chunk)
        self._written[name] = path
        self.names.append(name)

    def link(self, name: str, target: str) -> None:
        if self._skipped(name) or target not in self._written:
            return
        path = self._prepare(name)
        with os.fdopen(os.open(self._written[target], _READ), "rb") as source:
            executable = bool(os.fstat(source.fileno()).st_mode & 0o111)
            with self._create(path, name, executable) as out:
                shutil.copyfileobj(source, out)
        self._written[name] = path
        self.names.append(name)


def extract_bundle(
    data: bytes | BinaryIO,
    dest: Path,
    limits: BundleLimits | None = None,
    *,
    skip_prefixes: tuple[str, ...] = DEFAULT_SKIP_PREFIXES,
) -> list[str]:
    """Extract the regular files of a bundle under `dest` and return their names in archive order.

    The bundle is inspected in full first and `UnsafeBundle(problems)` is raised before anything is written
    if it breaks a rule; then it is read again, with every limit applied while streaming. Only regular files
    are written (mode 0644, or 0755 when the member is executable), parents are created as real directories,
    nothing is ever written, followed or linked outside `dest`, and existing files are never overwritten. A
    link member pointing to an earlier file of the bundle is written as a copy of it; other links are
    skipped. Members under `skip_prefixes` are checked but not written. A stream that can seek is rewound.
    """
    limits = limits or BundleLimits()
    source = open_source(data, limits.max_bytes)
    try:
        problems = scan_source(source, limits)
        if problems:
            raise UnsafeBundle(problems)
        dest.mkdir(parents=True, exist_ok=True)
        disk = _Disk(dest.resolve(strict=True), tuple(skip_prefixes))
        try:
            problems = scan_source(source, limits, disk)
        except _InTheWay as error:
            problems = [unsafe(f"member {error}", _HINT_WAY)]
        if problems:
            raise UnsafeBundle(problems)
        return disk.names
    finally:
        source.close()
