"""Request bodies: spooled to disk or read with a size limit (draining the rest), JSON with bounded nesting (multipart
bodies: `api.multipart`).

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
from starlette.concurrency import run_in_threadpool

from ...contract import Problem
from ..services.errors import Rejected, TooLarge
from ..services.json_text import MAX_JSON_DEPTH, json_depth_problem, load_json

__all__ = [
    "IN_MEMORY",
    "MAX_JSON_DEPTH",
    "Upload",
    "json_depth_problem",
    "load_json",
    "read_body",
    "read_json",
    "read_json_object",
    "spool_file",
    "spooled_body",
]

_CHUNK = 1024 * 1024  # bytes gathered before one write to the spool file, and read back at a time
IN_MEMORY = 256 * 1024  # a body (or a multipart bundle part) up to this size is never written to disk


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

    async def chunks(self) -> AsyncGenerator[bytes, None]:
        """Yield the body again in chunks, reading the file in the threadpool."""
        await run_in_threadpool(self._handle.seek, 0)
        while chunk := await run_in_threadpool(self._handle.read, _CHUNK):
            yield chunk

    def __repr__(self) -> str:
        return f"Upload(size={self.size})"


def spool_file(directory: Path) -> IO[bytes]:
    """Return a new unnamed temporary file in `directory` (made if missing): gone when closed, even after a crash."""
    directory.mkdir(parents=True, exist_ok=True)
    return tempfile.TemporaryFile(mode="w+b", dir=directory)  # unnamed: gone when closed, even after a crash


def _write(handle: IO[bytes], chunks: list[bytes]) -> None:
    handle.writelines(chunks)


@contextlib.asynccontextmanager
async def spooled_body(request: Request, *, limit: int, directory: Path) -> AsyncIterator[Upload]:
    """Yield the body: held in memory up to IN_MEMORY bytes (a usual bundle: no file, no thread hop), spooled to an
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
            if pending_bytes >= (_CHUNK if handle is not None else IN_MEMORY):
                if handle is None:
                    handle = await run_in_threadpool(spool_file, directory)
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
