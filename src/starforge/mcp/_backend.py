"""The seam every tool runs against: a console client with the caller's credentials, the recipe declarations, a lab.

A tool never checks a rule itself: it asks the console through `starforge.client.Console`, so an agent has exactly
the permissions of a person using `sf` with the same token.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import httpx

    from starforge.client import Console
    from starforge.recipes import Catalog

__all__ = ["Backend", "BackendProvider", "SharedBackend"]

Connect = Callable[["httpx.BaseTransport | None"], "Console"]


@dataclass
class Backend:
    """What one request's tools use: `console` (lazy), `connect(transport)` for a dedicated client, the catalog, the lab.

    connect: returns a new client of the same console with the same credentials (a transport may wrap the network).
    catalog: returns the recipe declarations (the console's served catalog over HTTP, the local one over stdio).
    lab: the lab root found from the working directory (stdio only), or None.
    """

    connect: Connect
    catalog: Callable[[], Catalog]
    lab: Path | None = None
    _console: Console | None = field(default=None, init=False, repr=False)

    @property
    def console(self) -> Console:
        """Return the shared client, connecting on first use (errors surface as the tool's error)."""
        if self._console is None:
            self._console = self.connect(None)
        return self._console

    def close(self) -> None:
        """Close the shared client, if one was opened."""
        if self._console is not None:
            self._console.close()
            self._console = None


class BackendProvider(Protocol):
    """Opens the backend of one MCP request; `request` is the HTTP request (None over stdio)."""

    def open(self, request: Any) -> AbstractContextManager[Backend]:
        """Return a context manager yielding the request's backend and releasing it afterwards."""
        ...


class SharedBackend:
    """A provider that hands every request the same backend (stdio: one user, one process)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @contextmanager
    def open(self, request: Any) -> Iterator[Backend]:
        """Yield the shared backend; it stays open for the next request."""
        yield self.backend

    def close(self) -> None:
        """Close the shared backend's client."""
        self.backend.close()
