"""Request scope: open the caller's backend around each tool call, resource read and prompt, and expose it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from ._backend import Backend, BackendProvider

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

__all__ = ["BackendScope", "bound", "current_backend"]

_CURRENT: ContextVar[Backend | None] = ContextVar("starforge_mcp_backend", default=None)
# Only these methods run StarForge code; everything else (initialize, listings, pings) needs no console.
_SCOPED = frozenset({"tools/call", "resources/read", "prompts/get"})


def current_backend() -> Backend:
    """Return the backend of the request being handled; raise outside a request (a bug)."""
    backend = _CURRENT.get()
    if backend is None:
        raise RuntimeError("no StarForge backend: this code runs only inside an MCP request")
    return backend


@contextmanager
def bound(backend: Backend) -> Iterator[Backend]:
    """Make `backend` the current one for the code run inside the block."""
    token = _CURRENT.set(backend)
    try:
        yield backend
    finally:
        _CURRENT.reset(token)


class BackendScope:
    """Server middleware: open the request's backend from the provider, bind it for the handler, release it."""

    def __init__(self, provider: BackendProvider) -> None:
        self.provider = provider

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Run the rest of the chain with the caller's backend bound (only for methods that need one)."""
        if ctx.method not in _SCOPED:
            return await call_next(ctx)
        with self.provider.open(ctx.request) as backend, bound(backend):
            return await call_next(ctx)
