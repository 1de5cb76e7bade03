"""Request bodies: read with a size limit (draining the rest so the client sees our answer), JSON and multipart."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

from fastapi import Request
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartParser

from ...contract import JsonObject, Problem
from ..services.errors import Rejected, TooLarge

__all__ = ["read_body", "read_json", "read_multipart"]


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
    """Return the JSON body (repeated keys remembered); a malformed body is a 422 with a problem."""
    raw = await read_body(request, limit)
    if not raw.strip():
        return {}
    try:
        return json.loads(raw, object_pairs_hook=JsonObject)
    except ValueError as exc:
        raise Rejected("Invalid request", [Problem("<body>", "invalid_json", f"the body is not valid JSON: {exc}")],
                       status=422) from exc


async def _once(data: bytes) -> AsyncGenerator[bytes, None]:
    yield data


async def read_multipart(request: Request, data: bytes) -> dict[str, bytes | str]:
    """Parse an already read multipart body into `{part name: bytes for files, text for fields}`."""
    parser = MultiPartParser(request.headers, _once(data), max_files=4, max_fields=16)
    form = await parser.parse()
    out: dict[str, bytes | str] = {}
    for key, value in form.multi_items():
        if isinstance(value, UploadFile):
            out[key] = await value.read()
        else:
            out[key] = value
    return out
