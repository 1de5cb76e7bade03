"""MCP over streamable HTTP at `/api/mcp/rpc` (issue [6]): authenticated like the API, the SDK loaded on first use.

A request without a valid bearer token is answered 401 by the console's own error translator, before any MCP code
runs. The tools then run in this process on the console's services as the authenticated user
(`mcp_backend.ServiceBackend`): the same use cases, permissions and refusals as the REST routes, so a viewer can read
but not submit and a user sees only their own jobs. The MCP session manager runs inside the console's lifespan.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.to_thread
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from .api.deps import current_user
from .services.accounts.credentials import UserView
from .services.context import Runtime

if TYPE_CHECKING:
    from fastapi import FastAPI

    from starforge.mcp import HttpTransport

__all__ = ["MCP_PATH", "McpEndpoint", "caller_of", "mount_mcp"]

MCP_PATH = "/api/mcp/rpc"
_CALLER = "starforge.mcp.caller"  # scope key: the account this endpoint authenticated


def caller_of(request: Any) -> UserView:
    """Return the account the endpoint authenticated for `request` (the SDK's request, sharing the ASGI scope)."""
    user = request.scope.get(_CALLER) if request is not None else None
    if not isinstance(user, UserView):
        raise RuntimeError("an MCP request reached the tools without an authenticated caller")
    return user


class McpEndpoint:
    """The ASGI app at `/api/mcp/rpc`: authenticate, then hand the request to the MCP transport (built once)."""

    def __init__(self, rt: Runtime) -> None:
        self._rt = rt
        self._transport: HttpTransport | None = None
        self._group: anyio.abc.TaskGroup | None = None
        self._lock: anyio.Lock | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        # AuthRequired -> 401 through the console's error handlers, before any MCP code runs
        scope[_CALLER] = await current_user(request)
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

        from .mcp_backend import ServiceBackends

        return HttpTransport(ServiceBackends(self._rt, caller_of))

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
