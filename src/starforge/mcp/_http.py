"""The streamable HTTP transport: an ASGI handler and the session manager's lifespan, for mounting in a host app."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings

from ._backend import BackendProvider
from ._server import build_server

__all__ = ["MAX_BODY_BYTES", "HttpTransport"]

# A submission's bundle travels base64-encoded inside the JSON-RPC body; larger bundles go through `sf submit`.
MAX_BODY_BYTES = 64 * 1024 * 1024


class HttpTransport:
    """Stateless streamable HTTP with JSON answers, serving the common tools: `handle` serves requests while
    `running()` is entered.

    provider: opens each request's backend; the host has authenticated the request before `handle`.

    Stateless: every POST is complete in itself, so no session outlives a request and no session can be reused
    under another caller. DNS-rebinding checks are off: callers authenticate with a bearer token, not a cookie.
    """

    def __init__(self, provider: BackendProvider) -> None:
        self.server = build_server(provider)
        # Building the SDK's app creates its session manager, which the SDK exposes for mounting in a host app;
        # the Starlette app itself is not used: the host routes to `handle`.
        self.server.streamable_http_app(
            stateless_http=True,
            json_response=True,
            max_request_body_size=MAX_BODY_BYTES,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.manager = self.server.session_manager

    async def handle(self, scope: Any, receive: Any, send: Any) -> None:
        """Serve one HTTP request (the host has authenticated it)."""
        await self.manager.handle_request(scope, receive, send)

    def running(self) -> AbstractAsyncContextManager[None]:
        """Return the session manager's lifespan; requests are served only inside it."""
        return self.manager.run()
