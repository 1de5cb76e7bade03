"""`SpooledBody`: how a service reads a request body the API spooled to disk (a bundle, a plugin package, a
dataset).

Tier: shared (a protocol; no database). The API's `body.Upload` implements it; services read the bytes back in
their worker thread, so a large body never passes through the event loop or the console's memory twice.
"""

from __future__ import annotations

from typing import BinaryIO, Protocol

__all__ = ["SpooledBody"]


class SpooledBody(Protocol):
    """A request body spooled by the API: its size, and its bytes read back (blocking)."""

    size: int

    def read_bytes(self) -> bytes:
        """Return the whole body."""
        ...

    def stream(self) -> BinaryIO:
        """Return the spooled file rewound to its start, to read large bodies (datasets) without holding them."""
        ...
