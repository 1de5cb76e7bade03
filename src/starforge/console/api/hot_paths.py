"""The console's two hottest routes — dry-run admission and submission — dispatched without FastAPI's router.

FastAPI's route matching and dependency resolution cost as much as a dry-run admission itself (docs/performance.md).
For these two (method, path) pairs this middleware calls the very same endpoint functions of `routers.jobs`, with
their dependencies resolved here in the order FastAPI uses (the router's, then the caller, so nothing is read from an
unauthenticated client), and renders any error with the application's own exception handlers. Every other request —
another method on the same path included — goes through FastAPI unchanged, and FastAPI still declares both routes,
so the OpenAPI description is whole.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from .deps import current_user, refuse_nul_parameters, runtime, upload_dir
from .routers import jobs

__all__ = ["HotPaths"]


async def _admission_check(request: Request) -> Response:
    await refuse_nul_parameters(request)  # the `jobs` router's own dependency, first as in FastAPI
    user = await current_user(request)
    verdict = await jobs.admission_check(request, user=user, rt=await runtime(request))
    return JSONResponse(verdict)


async def _submit(request: Request) -> Response:
    await refuse_nul_parameters(request)
    user = await current_user(request)
    return await jobs.submit_job(request, user=user, rt=await runtime(request), spool=await upload_dir(request))


_ROUTES: dict[tuple[str, str], Callable[[Request], Awaitable[Response]]] = {
    ("POST", "/api/admission/check"): _admission_check,
    ("POST", "/api/jobs"): _submit,
}


class HotPaths:
    """ASGI middleware: serve the hot routes directly, pass everything else on.

    Inside the application (`app.add_middleware(HotPaths)`, what in-process tests see) it finds the application in
    the scope; the server also puts it in front of the whole application (`HotPaths(app, application=app)`), which
    spares the application's own middleware stack on the hot routes."""

    def __init__(self, app: ASGIApp, application: Any = None) -> None:
        self.app = app
        self._application = application

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = _ROUTES.get((scope.get("method", ""), scope.get("path", ""))) if scope["type"] == "http" else None
        if endpoint is None:
            await self.app(scope, receive, send)
            return
        if self._application is not None:
            scope["app"] = self._application
        request = Request(scope, receive)
        try:
            response = await endpoint(request)
        except Exception as exc:  # rendered as FastAPI would: the application's handler for the nearest class
            response = await _render(scope["app"].exception_handlers, request, exc)
        await response(scope, receive, send)


async def _render(handlers: dict[Any, Any], request: Request, exc: Exception) -> Response:
    for kind in type(exc).__mro__:
        handler = handlers.get(kind)
        if handler is not None:
            response: Response = await handler(request, exc)
            return response
    raise exc
