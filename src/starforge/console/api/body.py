"""Request bodies: spooled to disk or read with a size limit (draining the rest), JSON with bounded nesting, multipart.

Reading a body is part of resolving a request, so it lives here; what the bytes mean is the services' business.
JSON nesting is bounded by `services.json_text` (re-exported here for the API's readers).

Uploads (bundles, plugin packages) up to 256 KiB stay in memory; larger ones go to an unnamed temporary file as they
arrive, so the console's memory does not grow with the body; callers authenticate first and read the bytes back only
once they know who is asking.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import IO, Any, BinaryIO, cast

from fastapi import Request
from python_multipart.multipart import parse_options_header
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser

from ...contract import Problem
from ..services.admission import Envelope
from ..services.errors import Rejected, TooLarge
from ..services.json_text import MAX_JSON_DEPTH, json_depth_problem, load_json

__all__ = [
    "MAX_JSON_DEPTH",
    "Upload",
    "json_depth_problem",
    "load_json",
    "read_body",
    "read_json",
    "read_json_object",
    "read_multipart",
    "read_submission",
    "spooled_body",
]

_CHUNK = 1024 * 1024  # bytes gathered before one write to the spool file, and read back at a time
_IN_MEMORY = 256 * 1024  # a body up to this size is never written to disk
_EPILOGUE = 4096  # text a multipart body may carry after its closing delimiter


async def read_body(request: Request, limit: int) -> bytes:
    """Return the whole body; past `limit` keep reading (discarding) and then raise TooLarge."""
    chunks: list[bytes] = []
    size = 0
    too_large = False
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            too_large = True
            chunks.clear()
            continue
        chunks.append(chunk)
    if too_large:
        raise TooLarge(f"the request body is {size} bytes; this console accepts at most {limit} bytes")
    return b"".join(chunks)


async def read_json(request: Request, limit: int = 4 * 1024 * 1024) -> Any:
    """Return the JSON body (repeated keys remembered; empty = {}); malformed or too deep is a 422 with a problem."""
    raw = await read_body(request, limit)
    if not raw.strip():
        return {}
    value, problems = load_json(raw, "<body>")
    if problems:
        raise Rejected("Invalid request", problems, status=422)
    return value


def _nul_field(value: Any) -> str | None:
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str) and "\x00" in item:
            return path or "<body>"
        if isinstance(item, dict):
            stack += [(f"{path}.{key}" if path else str(key), child) for key, child in item.items()]
            if any("\x00" in str(key) for key in item):
                return path or "<body>"
        elif isinstance(item, list):
            stack += [(f"{path}[{index}]", child) for index, child in enumerate(item)]
    return None


async def read_json_object(request: Request, limit: int = 4 * 1024 * 1024) -> dict[str, Any]:
    """Return the JSON body, which must be an object whose text holds no NUL character (422 with a problem
    otherwise: a NUL can be neither stored nor compared by the database)."""
    value = await read_json(request, limit)
    if not isinstance(value, dict):
        raise Rejected("Invalid request", [Problem("<body>", "not_an_object", "the body must be a JSON object",
                                                   "send {\"key\": value, ...}")], status=422)
    field = _nul_field(value)
    if field is not None:
        raise Rejected("Invalid request", [Problem(field, "invalid_request", "the text holds a NUL character",
                                                   "remove the NUL (\\u0000) character")], status=422)
    return value


class Upload:
    """A request body, in memory or spooled to an unnamed temporary file: its size, and its bytes read back on
    demand."""

    def __init__(self, handle: IO[bytes], size: int) -> None:
        self._handle = handle
        self.size = size

    def read_bytes(self) -> bytes:
        """Return the whole body (blocking: call it in the threadpool)."""
        self._handle.seek(0)
        return self._handle.read()

    def stream(self) -> BinaryIO:
        """Return the spooled file rewound to its start (blocking: read it in the threadpool)."""
        self._handle.seek(0)
        return cast(BinaryIO, self._handle)

    def tail(self, size: int) -> bytes:
        """Return the last `size` bytes of the body (blocking: call it in the threadpool)."""
        self._handle.seek(max(0, self.size - size))
        return self._handle.read(size)

    async def chunks(self) -> AsyncGenerator[bytes, None]:
        """Yield the body again in chunks, reading the file in the threadpool."""
        await run_in_threadpool(self._handle.seek, 0)
        while chunk := await run_in_threadpool(self._handle.read, _CHUNK):
            yield chunk

    def __repr__(self) -> str:
        return f"Upload(size={self.size})"


def _spool_file(directory: Path) -> IO[bytes]:
    directory.mkdir(parents=True, exist_ok=True)
    return tempfile.TemporaryFile(mode="w+b", dir=directory)  # unnamed: gone when closed, even after a crash


def _write(handle: IO[bytes], chunks: list[bytes]) -> None:
    handle.writelines(chunks)


@contextlib.asynccontextmanager
async def spooled_body(request: Request, *, limit: int, directory: Path) -> AsyncIterator[Upload]:
    """Yield the body: held in memory up to _IN_MEMORY bytes (a usual bundle: no file, no thread hop), spooled to an
    unnamed file in `directory` beyond (removed on exit); past `limit` keep reading, discarding, and then raise
    TooLarge, so the client reads the refusal instead of a broken connection. Callers authenticate first, so only a
    known account can hold that memory."""
    handle: IO[bytes] | None = None
    try:
        size = 0
        pending: list[bytes] = []
        pending_bytes = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                pending.clear()
                continue
            pending.append(chunk)
            pending_bytes += len(chunk)
            if pending_bytes >= (_CHUNK if handle is not None else _IN_MEMORY):
                if handle is None:
                    handle = await run_in_threadpool(_spool_file, directory)
                await run_in_threadpool(_write, handle, pending)
                pending, pending_bytes = [], 0
        if size > limit:
            raise TooLarge(f"the request body is {size} bytes; this console accepts at most {limit} bytes")
        if handle is None:
            handle = io.BytesIO(b"".join(pending))
        else:
            await run_in_threadpool(_write, handle, pending)
            await run_in_threadpool(handle.flush)
        yield Upload(handle, size)
    finally:
        if handle is not None:
            handle.close()


def _multipart_refused(reason: str) -> Rejected:
    return Rejected("The request body was refused", [
        Problem("<body>", "invalid_multipart", f"the multipart body is malformed: {reason}",
                "send multipart/form-data with a boundary parameter and complete parts (spec, bundle)")])


async def read_multipart(request: Request, upload: Upload) -> dict[str, bytes | str]:
    """Parse a spooled multipart body into `{part name: bytes for files, text for fields}`; a malformed body
    (no boundary, broken part headers, an oversized field, no closing delimiter) is a 400 naming the body."""
    parser = MultiPartParser(request.headers, upload.chunks(), max_files=4, max_fields=16)
    try:
        form = await parser.parse()
    except MultiPartException as exc:
        raise _multipart_refused(exc.message) from exc
    try:
        boundary = parse_options_header(request.headers.get("content-type", ""))[1].get(b"boundary", b"")
        tail = await run_in_threadpool(upload.tail, len(boundary) + 4 + _EPILOGUE)
        if b"--" + boundary + b"--" not in tail:
            raise _multipart_refused("it ends before its closing boundary (truncated)")
        out: dict[str, bytes | str] = {}
        for key, value in form.multi_items():
            out[key] = await value.read() if isinstance(value, UploadFile) else value
        return out
    finally:
        await form.close()


async def read_submission(request: Request, upload: Upload) -> Envelope:
    """Return a submission's envelope as it arrived: the parts of a multipart body, or the `X-Forge-Meta` text and
    the spooled gzip body."""
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        return Envelope(parts=await read_multipart(request, upload))
    return Envelope(meta_header=request.headers.get("x-forge-meta", ""), body=upload)
