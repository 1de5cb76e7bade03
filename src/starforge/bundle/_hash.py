"""Bundle hashes: the content address of a bundle's compressed bytes."""

from __future__ import annotations

import hashlib
from typing import BinaryIO

__all__ = ["bundle_sha256"]

_CHUNK = 1024 * 1024


def bundle_sha256(data: bytes | BinaryIO) -> str:
    """Return `sha256:<hex>` of the bundle bytes; a stream is read from its position to its end, then rewound.

    A stream that cannot seek is consumed.
    """
    digest = hashlib.sha256()
    if isinstance(data, (bytes, bytearray, memoryview)):
        digest.update(data)
        return "sha256:" + digest.hexdigest()
    start = data.tell() if data.seekable() else None
    while chunk := data.read(_CHUNK):
        digest.update(chunk)
    if start is not None:
        data.seek(start)
    return "sha256:" + digest.hexdigest()
