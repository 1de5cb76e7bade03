"""`sf mcp`: the tools, the lab tools included, over stdin/stdout, as the account of `sf login`."""

from __future__ import annotations

from pathlib import Path

import httpx

from starforge.client import Console

from .._backend import SharedBackend
from .._server import build_server
from .._tools import TOOLS
from ._client import ClientBackend
from ._tools import LAB_TOOLS

__all__ = ["STDIO_TOOLS", "serve_stdio", "stdio_backend"]

STDIO_TOOLS = TOOLS + LAB_TOOLS


def _from_home(transport: httpx.BaseTransport | None) -> Console:
    return Console.from_home(transport=transport)


def stdio_backend(lab: Path | None) -> ClientBackend:
    """Return the backend of `sf mcp`: `Console.from_home()` (refreshed like any `sf` command), the lab."""
    return ClientBackend(_from_home, lab=lab)


def serve_stdio(lab: Path | None) -> None:
    """Serve the tools (the lab tools included) over stdin/stdout until the client disconnects."""
    backend = stdio_backend(lab)
    try:
        build_server(SharedBackend(backend), tools=STDIO_TOOLS).run("stdio")
    finally:
        backend.close()
