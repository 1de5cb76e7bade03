"""The stdio transport (`sf mcp`): one user, the credentials of `sf login`, and the lab of the working directory."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

from ._backend import Backend, SharedBackend
from ._server import build_server

if TYPE_CHECKING:
    import httpx

    from starforge.client import Console

__all__ = ["serve_stdio", "stdio_backend"]


def _connect(transport: httpx.BaseTransport | None) -> Console:
    from starforge.client import Console

    return Console.from_home(transport=transport)


def stdio_backend(lab: Path | None) -> Backend:
    """Return the backend of `sf mcp`: `Console.from_home()` per connection, the installed catalog, the lab."""
    from starforge.lab import client_catalog

    return Backend(connect=_connect, catalog=functools.cache(client_catalog), lab=lab)


def serve_stdio(lab: Path | None) -> None:
    """Serve the tools (the lab tools included) over stdin/stdout until the client disconnects."""
    provider = SharedBackend(stdio_backend(lab))
    try:
        build_server(provider, lab_tools=True).run("stdio")
    finally:
        provider.close()
