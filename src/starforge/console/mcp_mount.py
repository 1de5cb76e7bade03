"""MCP over streamable HTTP at `/api/mcp/rpc` (issue [6]): authenticated like the API, the SDK loaded on first use.

A request without a valid bearer token is answered 401 by the console's own error translator, before any MCP code
runs. Tool calls then reach this console over loopback HTTP (`settings.base_url`) with the caller's token, through
`starforge.client.Console`: the very routes, checks and permissions `sf` meets, so a viewer can read but not submit
and a user sees only their own jobs. The MCP session manager runs inside the console's lifespan.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.to_thread
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from .api.deps import bearer_token, current_user
from .runtime import Runtime

if TYPE_CHECKING:
    from fastapi import FastAPI

    from starforge.mcp import Backend, HttpTransport

__all__ = ["MCP_PATH", "CallerBackends", "McpEndpoint", "mount_mcp"]

MCP_PATH = "/api/mcp/rpc"
_TOKEN = "starforge.mcp.bearer"  # scope key: the bearer token this endpoint verified


class CallerBackends:
    """Backend provider for HTTP requests: a client of this console carrying the request's verified token."""

    def __init__(self, rt: Runtime) -> None:
        self._server = rt.settings.base_url
        self._catalog = rt.catalog

    @contextmanager
    def open(self, request: Any) -> Iterator[Backend]:
        """Yield the request's backend and close its client afterwards."""
        from starforge.client import Console
        from starforge.mcp import Backend

        token = request.scope.get(_TOKEN) if request is not None else None
        if not token:
            raise RuntimeError("an MCP request reached the tools without a verified bearer token")
        server, catalog = self._server, self._catalog
        backend = Backend(connect=lambda transport: Console(server, token, transport=transport),
                          catalog=lambda: catalog)
        try:
            yield backend
        finally:
            backend.close()


class McpEndpoint:
    """The ASGI app at `/api/mcp/rpc`: authenticate, then hand the request to the MCP transport (built once)."""

    def __init__(self, rt: Runtime) -> None:
        self._rt = rt
        self._transport: HttpTransport | None = None
        self._group: anyio.abc.TaskGroup | None = None
        self._lock: anyio.Lock | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        await run_in_threadpool(current_user, request)  # AuthRequired -> 401 through the console's error handlers
        scope[_TOKEN] = bearer_token(request)
        transport = await self._ready()
        await transport.handle(scope, receive, send)

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Hold the task group the MCP session manager runs in, for as long as the console runs."""
        self._lock = anyio.Lock()
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                group.cancel_scope.cancel()
                self._group = self._transport = None

    def _build(self) -> HttpTransport:
        from starforge.mcp import HttpTransport

        return HttpTransport(CallerBackends(self._rt))

    async def _ready(self) -> HttpTransport:
        if self._transport is not None:
            return self._transport
        if self._group is None or self._lock is None:
            raise RuntimeError("the MCP endpoint serves only while the console's lifespan runs")
        async with self._lock:
            if self._transport is None:
                transport = await anyio.to_thread.run_sync(self._build)  # imports the SDK off the event loop
                await self._group.start(self._serve, transport)
                self._transport = transport
        return self._transport

    @staticmethod
    async def _serve(transport: HttpTransport, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        async with transport.running():
            task_status.started()
            await anyio.sleep_forever()


def mount_mcp(app: FastAPI, rt: Runtime) -> None:
    """Route `/api/mcp/rpc` (every method) to the MCP endpoint and nest its lifespan inside the console's."""
    endpoint = McpEndpoint(rt)
    app.router.routes.append(Route(MCP_PATH, endpoint=endpoint, include_in_schema=False))  # ASGI: every method
    console_lifespan = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(host: Any) -> AsyncIterator[Any]:
        async with console_lifespan(host) as state, endpoint.lifespan():
            yield state

    app.router.lifespan_context = lifespan
