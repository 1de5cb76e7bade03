"""Multipart bodies read part by part as they arrive, each part bounded by a limit of its own name, and a
submission's body in either of its shapes.

A part is never read whole before it is checked: its bytes are counted as python-multipart's parser hands them
over, and the first byte past its name's limit ends the request with a 413 naming the part and the limit (the rest
of the body is not read). Small parts (`spec`, `exp`, `profile`: 1 MiB; `sweep`: 4 MiB) stay in memory; the
`bundle` part goes to an unnamed temporary file in the uploads folder past 256 KiB (`body.spool_to`), removed when
the request ends, on every path. Parts of other names are read within the small limit and dropped. The caller's
token was checked by the route; `writer_parts` and `submission_body` check its role and maintenance mode
(`submissions.require_writable`) before any part is read.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from fastapi import Request
from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.concurrency import run_in_threadpool

from ...contract import Problem
from ..services.accounts.credentials import UserView
from ..services.admission import Envelope
from ..services.context import Runtime
from ..services.errors import Rejected, TooLarge
from ..services.jobs.submissions import require_writable
from .body import IN_MEMORY, Upload, spool_file, spooled_body

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

__all__ = ["MAX_PARTS", "SMALL_PART", "SWEEP_PART", "PartLimits", "read_parts", "submission_body", "writer_parts"]

SMALL_PART = 1024 * 1024  # a `spec`, `exp` or `profile` part: JSON or text of a few kilobytes
SWEEP_PART = 4 * 1024 * 1024  # a `sweep` part: up to 256 points of a JobSpec each (16 KiB a point)
MAX_PARTS = 16  # parts in one body
_MAX_HEADERS = 16 * 1024  # bytes of one part's headers
_OVERHEAD = SWEEP_PART + MAX_PARTS * (_MAX_HEADERS + SMALL_PART)  # what a body may carry besides its bundle
_SMALL_NAMES = ("spec", "sweep", "exp", "profile")
SPOOLED = "bundle"  # the one part that may be large, and goes to a file


@dataclass(frozen=True)
class PartLimits:
    """The most bytes each part may hold: `bundle` (the console's `max_bundle_bytes`), `sweep`, and every other part
    `small`."""

    bundle: int
    small: int = SMALL_PART
    sweep: int = SWEEP_PART

    def of(self, name: str) -> int:
        """Return the limit of the part called `name`."""
        return self.bundle if name == SPOOLED else self.sweep if name == "sweep" else self.small


def _refused(reason: str) -> Rejected:
    return Rejected("The request body was refused", [
        Problem("<body>", "invalid_multipart", f"the multipart body is malformed: {reason}",
                "send multipart/form-data with a boundary parameter and complete parts (spec, bundle)")])


def _too_large(name: str, limit: int) -> TooLarge:
    return TooLarge(f"the multipart part {name!r} is larger than this console accepts ({limit} bytes)", [
        Problem(name, "part_too_large", f"the part {name!r} exceeds its limit of {limit} bytes",
                "a spec or sweep part is JSON of a few kilobytes; a bundle holds only the experiment's files "
                "(see `sf submit --dry-run`)" if name != SPOOLED else
                "keep data and checkpoints out of the bundle: push datasets with `sf dataset push`",
                {"limit": limit})])


class _Part:
    """One part being read: its name, whether it is a file, its size so far, and where its bytes go."""

    def __init__(self) -> None:
        self.header_name = b""
        self.header_value = b""
        self.disposition = b""
        self.header_bytes = 0
        self.name = ""
        self.is_file = False
        self.size = 0
        self.kept: list[bytes] | None = None  # a small part of a known name, in memory
        self.handle: IO[bytes] | None = None  # the spooled part
        self.pending: list[bytes] = []  # bytes of the spooled part not yet written


class _Reader:
    """The parser's callbacks: sizes checked as bytes arrive, spooled bytes handed to the caller to write."""

    def __init__(self, limits: PartLimits) -> None:
        self.limits = limits
        self.part = _Part()
        self.count = 0
        self.ended = False
        self.small: dict[str, bytes | str] = {}
        self.spooled: _Part | None = None

    def callbacks(self) -> MultipartCallbacks:
        return {"on_part_begin": self.begin, "on_header_field": self.header_field,
                "on_header_value": self.header_value, "on_header_end": self.header_end,
                "on_headers_finished": self.headers_done, "on_part_data": self.data, "on_part_end": self.end,
                "on_end": self.finish}

    def begin(self) -> None:
        self.count += 1
        if self.count > MAX_PARTS:
            raise _refused(f"it has more than {MAX_PARTS} parts")
        self.part = _Part()

    def _header_bytes(self, size: int) -> None:
        self.part.header_bytes += size
        if self.part.header_bytes > _MAX_HEADERS:
            raise _refused(f"a part's headers are longer than {_MAX_HEADERS} bytes")

    def header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_bytes(end - start)
        self.part.header_name += data[start:end]

    def header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_bytes(end - start)
        self.part.header_value += data[start:end]

    def header_end(self) -> None:
        if self.part.header_name.strip().lower() == b"content-disposition":
            self.part.disposition = self.part.header_value
        self.part.header_name = self.part.header_value = b""

    def headers_done(self) -> None:
        _kind, options = parse_options_header(self.part.disposition)
        if b"name" not in options:
            raise _refused('a part has no Content-Disposition header with a "name"')
        name = options[b"name"].decode("utf-8", "replace")
        if name in self.small or (name == SPOOLED and self.spooled is not None):
            raise _refused(f"the part {name!r} is sent twice")
        self.part.name, self.part.is_file = name, b"filename" in options
        if name == SPOOLED:
            self.spooled = self.part
        elif name in _SMALL_NAMES:
            self.part.kept = []

    def data(self, data: bytes, start: int, end: int) -> None:
        part = self.part
        part.size += end - start
        limit = self.limits.of(part.name)
        if part.size > limit:
            raise _too_large(part.name, limit)
        if part.kept is not None:
            part.kept.append(data[start:end])
        elif part is self.spooled:
            part.pending.append(data[start:end])

    def end(self) -> None:
        part = self.part
        if part.kept is not None:
            raw = b"".join(part.kept)
            self.small[part.name] = raw if part.is_file else raw.decode("utf-8", "replace")

    def finish(self) -> None:
        self.ended = True


def _write(handle: IO[bytes], chunks: list[bytes]) -> None:
    handle.writelines(chunks)


@contextlib.asynccontextmanager
async def read_parts(request: Request, *, limits: PartLimits,
                     directory: Path) -> AsyncIterator[dict[str, bytes | str | Upload]]:
    """Yield the parts of a multipart body, `{name: text of a field, bytes of a small file, the spooled bundle}`,
    reading the body as it arrives; a malformed body is a 400 at `<body>`, a part past its limit a 413 at its name
    (nothing more of the body is read). The spooled bundle is removed on exit, on every path."""
    boundary = parse_options_header(request.headers.get("content-type", ""))[1].get(b"boundary", b"")
    if not boundary:
        raise _refused("the Content-Type header has no boundary parameter")
    reader = _Reader(limits)
    parser = MultipartParser(boundary, reader.callbacks())
    ceiling = limits.bundle + _OVERHEAD
    received = 0
    try:
        async for chunk in request.stream():
            received += len(chunk)
            if received > ceiling:
                raise TooLarge(f"the request body is larger than this console accepts ({ceiling} bytes)")
            try:
                parser.write(chunk)
            except MultipartParseError as exc:
                raise _refused(str(exc).split(" at index")[0] or "its parts cannot be read") from exc
            await _flush(reader.spooled, directory)
        if not reader.ended:
            raise _refused("it ends before its closing boundary (truncated)")
        parts: dict[str, bytes | str | Upload] = dict(reader.small)
        if reader.spooled is not None:
            handle = reader.spooled.handle or io.BytesIO(b"".join(reader.spooled.pending))
            if reader.spooled.handle is not None:
                await run_in_threadpool(handle.flush)
            parts[SPOOLED] = Upload(handle, reader.spooled.size)
        yield parts
    finally:
        if reader.spooled is not None and reader.spooled.handle is not None:
            reader.spooled.handle.close()


async def _flush(part: _Part | None, directory: Path) -> None:
    """Write the spooled part's pending bytes to its file once they pass the in-memory size."""
    if part is None or not part.pending:
        return
    if part.handle is None:
        if part.size < IN_MEMORY:
            return  # a small bundle stays in memory
        part.handle = await run_in_threadpool(spool_file, directory)
    chunks, part.pending = part.pending, []
    await run_in_threadpool(_write, part.handle, chunks)


@contextlib.asynccontextmanager
async def writer_parts(request: Request, *, rt: Runtime, user: UserView,
                       directory: Path) -> AsyncIterator[dict[str, bytes | str | Upload]]:
    """Yield the parts of a multipart body that creates jobs (`POST /api/sweeps`): refused before any part is read
    when `user` may not create jobs now (a viewer: 403; maintenance: 503), then read as `read_parts` does, the
    bundle within the console's `max_bundle_bytes`."""
    require_writable(user, rt)
    async with read_parts(request, limits=PartLimits(rt.settings.max_bundle_bytes), directory=directory) as parts:
        yield parts


@contextlib.asynccontextmanager
async def submission_body(request: Request, *, rt: Runtime, user: UserView, directory: Path) -> AsyncIterator[Envelope]:
    """Yield a submission's envelope as it arrived: a multipart body's parts (`writer_parts`: the caller's role and
    maintenance mode checked before any part is read), or the `X-Forge-Meta` text and the gzip body, spooled whole
    first (the official client reads no answer before it has sent everything; the service checks the role then)."""
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        async with writer_parts(request, rt=rt, user=user, directory=directory) as parts:
            yield Envelope(parts=parts)
        return
    async with spooled_body(request, limit=rt.settings.max_bundle_bytes, directory=directory) as upload:
        yield Envelope(meta_header=request.headers.get("x-forge-meta", ""), body=upload)
