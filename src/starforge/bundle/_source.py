"""Bundle sources: bytes or a binary stream, made readable several times with a known compressed size."""

from __future__ import annotations

import io
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

__all__ = ["Source", "open_source"]

_CHUNK = 1024 * 1024
_SPOOL_IN_MEMORY = 8 * 1024 * 1024


class Source:
    """A bundle that can be read from the start as often as needed; `size` is its compressed byte count."""

    def __init__(self, stream: BinaryIO, start: int, size: int, owned: bool) -> None:
        self._stream = stream
        self._start = start
        self.size = size
        self._owned = owned

    @contextmanager
    def open(self) -> Iterator[BinaryIO]:
        """Yield the stream positioned at the bundle's first byte; it is rewound there afterwards."""
        self._stream.seek(self._start)
        try:
            yield self._stream
        finally:
            self._stream.seek(self._start)

    def close(self) -> None:
        """Release a spooled copy; a caller's own stream is left open."""
        if self._owned:
            self._stream.close()


def open_source(data: bytes | BinaryIO, max_bytes: int) -> Source:
    """Return a re-readable `Source` for `data`; a `size` above `max_bytes` means "too large, not all read".

    Bytes and seekable streams are used in place (a stream from its current position); a stream that cannot
    seek is copied, up to `max_bytes + 1` bytes, into a spooled temporary file.
    """
    if isinstance(data, (bytes, bytearray, memoryview)):
        return Source(io.BytesIO(data), 0, len(data), owned=True)
    if data.seekable():
        start = data.tell()
        size = data.seek(0, io.SEEK_END) - start
        data.seek(start)
        return Source(data, start, size, owned=False)
    spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_IN_MEMORY)  # noqa: SIM115 - owned by the Source
    copied = 0
    while copied <= max_bytes and (chunk := data.read(min(_CHUNK, max_bytes + 1 - copied))):
        spool.write(chunk)
        copied += len(chunk)
    return Source(spool, 0, copied, owned=True)  # type: ignore[arg-type]
