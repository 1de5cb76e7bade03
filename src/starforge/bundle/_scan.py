"""Bundle inspection: walk a hostile bundle once, enforcing every structural rule and limit while streaming."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from typing import BinaryIO, Protocol

from ._ledger import Ledger
from ._limits import RATIO_FLOOR_BYTES, BundleLimits
from ._paths import link_target, path_problem
from ._problems import Problem, show, too_large, unsafe
from ._source import Source, open_source
from ._tarread import Member, TarFormatError, TarReader

__all__ = ["MAX_PROBLEMS", "Sink", "inspect_bundle", "scan_source"]

# A hostile bundle can break a rule in every member; report this many, then stop reading.
MAX_PROBLEMS = 20
# Tar headers, padding and the end-of-archive record come on top of file contents.
_OVERHEAD_PER_MEMBER = 8 * 1024
_OVERHEAD_FIXED = 1024 * 1024
_PULL = 64 * 1024  # decompressed bytes pulled from the gzip stream at a time

_HINT_REBUILD = "Rebuild the bundle with `sf submit`: members are relative POSIX paths inside the bundle."
_HINT_FORMAT = "Send the bundle as `sf submit` builds it: a complete gzip-compressed tar archive."
_HINT_SPECIAL = (
    "Remove devices, FIFOs and other special files from the experiment; only regular files are packed."
)
_HINT_LINK = "Replace the link with the file it points to, or make it point to a file inside the bundle."
_HINT_SIZE = "Keep large or generated files out of the bundle: register them as a dataset or volume instead."
_HINT_COUNT = (
    "Bundle fewer files: keep data and outputs out of <exp>/, common/ and configs/ (or git-ignore them)."
)
_HINT_RATIO = "Remove highly compressible generated files (padding, zero-filled data) from the bundle."

_SPECIAL = {"chardev": "a character device", "blockdev": "a block device", "fifo": "a FIFO"}


class Sink(Protocol):
    """Where an extraction puts the members a scan accepts; called only while no problem was found."""

    def file(self, name: str, executable: bool, chunks: Iterator[bytes]) -> None:
        """Store the regular file `name` from `chunks` (which may be left partly unread)."""

    def link(self, name: str, target: str) -> None:
        """Store `name` as a copy of the earlier file member `target`."""


class _Stop(Exception):
    """Raised inside a scan when reading must stop; carries the problem to report."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


class _Meter:
    """Pull decompressed bytes out of the gzip stream, enforcing the expansion limits as they arrive."""

    def __init__(self, gz: gzip.GzipFile, limits: BundleLimits, compressed: int) -> None:
        self._gz = gz
        self._limits = limits
        self._compressed = compressed
        self._cap = limits.max_total_bytes + limits.max_files * _OVERHEAD_PER_MEMBER + _OVERHEAD_FIXED
        self.raw = 0
        self.copied = 0
        self._buffer = b""
        self._at = 0

    def read(self, n: int) -> bytes:
        """Return up to `n` bytes; the gzip stream is pulled in _PULL-byte pieces (tar asks for 512 at a time)."""
        if len(self._buffer) - self._at >= n:
            self._at += n
            return self._buffer[self._at - n:self._at]
        rest = self._buffer[self._at:]
        self._buffer, self._at = self._pull(max(n - len(rest), _PULL)), 0
        more = min(n - len(rest), len(self._buffer))
        self._at = more
        return rest + self._buffer[:more]

    def _pull(self, n: int) -> bytes:
        try:
            data = self._gz.read(n)
        except EOFError:
            raise _Stop(
                unsafe("the bundle's gzip stream ends early (truncated upload?)", _HINT_FORMAT)
            ) from None
        except (gzip.BadGzipFile, zlib.error) as error:
            raise _Stop(unsafe(f"the bundle is not a valid gzip stream ({error})", _HINT_FORMAT)) from None
        self.raw += len(data)
        self._check()
        return data

    def add_copied(self, n: int) -> None:
        self.copied += n
        self._check()

    def _check(self) -> None:
        if self.raw > self._cap:
            raise _Stop(
                too_large(f"the bundle expands to more than {self._cap} bytes of tar data", _HINT_SIZE)
            )
        expanded = self.raw + self.copied
        ratio = self._limits.max_ratio
        if expanded > RATIO_FLOOR_BYTES and expanded > ratio * max(self._compressed, 1):
            raise _Stop(
                too_large(
                    f"the bundle expands more than {ratio:g} times "
                    f"({expanded} bytes so far from {self._compressed} compressed bytes)",
                    _HINT_RATIO,
                )
            )


def _structure_problem(member: Member, ledger: Ledger, limits: BundleLimits) -> Problem | None:
    """Return the first structural rule `member` breaks (name, clash, type, link), or None."""
    who = f"member {show(member.name)}"
    reason = path_problem(member.name, limits.max_path_len)
    if reason is not None:
        return unsafe(f"{who} {reason}", _HINT_REBUILD)
    clash = ledger.claim(member.name, member.kind)
    if clash is not None:
        return unsafe(f"{who} {clash}", _HINT_REBUILD)
    if member.kind in _SPECIAL:
        return unsafe(f"{who} is {_SPECIAL[member.kind]}", _HINT_SPECIAL)
    if member.kind == "other":
        return unsafe(f"{who} has the unsupported tar type {show(member.type_flag)}", _HINT_SPECIAL)
    if member.sparse:
        return unsafe(f"{who} is a sparse file", _HINT_REBUILD)
    if member.kind in ("symlink", "hardlink"):
        if not member.linkname:
            return unsafe(f"{who} is a link with an empty target", _HINT_LINK)
        if link_target(member.name, member.linkname, hard=member.kind == "hardlink") is None:
            return unsafe(
                f"{who} is a link pointing outside the bundle (to {show(member.linkname)})", _HINT_LINK
            )
    return None


class _Scan:
    """One pass over a bundle: problems found so far, the ledger, byte counts, and the optional sink."""

    def __init__(self, limits: BundleLimits, meter: _Meter, sink: Sink | None) -> None:
        self.limits = limits
        self.meter = meter
        self.sink = sink
        self.ledger = Ledger()
        self.problems: list[Problem] = []
        self.members = 0
        self.total = 0

    def walk(self, reader: TarReader) -> None:
        while len(self.problems) < MAX_PROBLEMS:
            member = reader.next()
            if member is None:
                return
            self.members += 1
            if self.members > self.limits.max_files:
                raise _Stop(
                    too_large(f"the bundle has more than {self.limits.max_files} members", _HINT_COUNT)
                )
            problem = _structure_problem(member, self.ledger, self.limits)
            if problem is not None:
                self.problems.append(problem)
            if member.kind in ("file", "other"):
                self._data(member, reader, accepted=problem is None and member.kind == "file")
            elif problem is None and member.kind in ("symlink", "hardlink"):
                self._link(member)

    def _check_total(self, name: str, extra: int) -> None:
        if self.total + extra > self.limits.max_total_bytes:
            raise _Stop(
                too_large(
                    f"member {show(name)} brings the bundle above {self.limits.max_total_bytes} bytes in total",
                    _HINT_SIZE,
                )
            )

    def _check_file_size(self, name: str, size: int) -> None:
        if size > self.limits.max_file_bytes:
            raise _Stop(
                too_large(
                    f"member {show(name)} is larger than the {self.limits.max_file_bytes}-byte limit for one file",
                    _HINT_SIZE,
                )
            )

    def _counted(self, member: Member, reader: TarReader, accepted: bool) -> Iterator[bytes]:
        seen = 0
        for chunk in reader.chunks():
            seen += len(chunk)
            self._check_file_size(member.name, seen)
            self._check_total(member.name, len(chunk))
            self.total += len(chunk)
            yield chunk
        if accepted:
            self.ledger.record_size(member.name, seen)

    def _data(self, member: Member, reader: TarReader, *, accepted: bool) -> None:
        # The header's claim is checked first so that a bomb is refused before it is inflated; then every
        # byte actually read is counted again.
        self._check_file_size(member.name, member.size)
        self._check_total(member.name, member.size)
        chunks = self._counted(member, reader, accepted)
        if accepted and self.sink is not None and not self.problems:
            self.sink.file(member.name, bool(member.mode & 0o111), chunks)
        for _ in chunks:
            pass

    def _link(self, member: Member) -> None:
        target = link_target(member.name, member.linkname, hard=member.kind == "hardlink")
        if target is None or target not in self.ledger.sizes:
            return  # points inside the bundle but not to an earlier file: nothing to materialise
        size = self.ledger.sizes[target]
        self._check_file_size(member.name, size)
        self._check_total(member.name, size)
        self.total += size
        self.meter.add_copied(size)
        self.ledger.record_size(member.name, size)
        if self.sink is not None and not self.problems:
            self.sink.link(member.name, target)


def _malformed(error: TarFormatError, started: bool) -> Problem:
    if not started:
        return unsafe(f"the bundle is not a gzip-compressed tar archive ({error})", _HINT_FORMAT)
    return unsafe(f"the bundle's tar archive is malformed: {error}", _HINT_FORMAT)


def scan_source(source: Source, limits: BundleLimits, sink: Sink | None = None) -> list[Problem]:
    """Return every problem of the bundle in `source` (up to `MAX_PROBLEMS`), feeding accepted members to `sink`."""
    if source.size > limits.max_bytes:
        return [too_large(f"the bundle is larger than {limits.max_bytes} compressed bytes", _HINT_SIZE)]
    with source.open() as stream, gzip.GzipFile(fileobj=stream, mode="rb") as gz:
        meter = _Meter(gz, limits, source.size)
        reader = TarReader(meter.read)
        scan = _Scan(limits, meter, sink)
        try:
            scan.walk(reader)
        except _Stop as stop:
            scan.problems.append(stop.problem)
        except TarFormatError as error:
            scan.problems.append(_malformed(error, reader.started))
    return scan.problems


def inspect_bundle(data: bytes | BinaryIO, limits: BundleLimits | None = None) -> list[Problem]:
    """Return every problem of a (possibly hostile) bundle; never raises on any content, and writes nothing.

    Problems have field "bundle" and code `bundle_unsafe` (structure: paths, links, types, format) or
    `bundle_too_large` (limits); reading stops at the first exceeded limit or after `MAX_PROBLEMS` problems.
    A stream is read from its current position and rewound there (one that cannot seek is consumed).
    """
    limits = limits or BundleLimits()
    source = open_source(data, limits.max_bytes)
    try:
        return scan_source(source, limits)
    finally:
        source.close()
