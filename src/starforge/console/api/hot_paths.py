"""The console's two hottest routes — dry-run admission and submission — dispatched without FastAPI's router.

FastAPI's route matching and dependency resolution cost as much as a dry-run admission itself (docs/performance.md).
`HOT_ENDPOINTS` names which endpoints are hot, nothing more: their methods, paths and dependencies are read from the
application's own routes, once, when the middleware is built (or on its first request inside the application), so
the router stays the one routing table. A hot route is served by calling its endpoint with its dependencies resolved
in FastAPI's order (the router's, then the endpoint's, so nothing is read from an unauthenticated client), and any
error is rendered with the application's own exception handlers. Every other request — another method on the same
path included — goes through FastAPI unchanged, and FastAPI still declares both routes, so the OpenAPI description
is whole.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from fastapi.dependencies.models import Dependant
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from .routers import jobs

__all__ = ["HOT_ENDPOINTS", "HotPaths", "hot_routes"]

Endpoint = Callable[[Request], Awaitable[Response]]

HOT_ENDPOINTS: tuple[Callable[..., Any], ...] = (jobs.admission_check, jobs.submit_job)


def _plain(dependant: Dependant) -> bool:
    """Return True when `dependant` takes the request and nothing FastAPI would have to read or solve for it."""
    return not (dependant.path_params or dependant.query_params or dependant.header_params
                or dependant.cookie_params or dependant.body_params or dependant.websocket_param_name
                or dependant.http_connection_param_name or dependant.response_param_name
                or dependant.background_tasks_param_name or dependant.security_scopes_param_name)


def _holds(route: Any, endpoints: tuple[Callable[..., Any], ...]) -> bool:
    """Return whether `route` is, or is an included router holding (at any depth), a route of one of `endpoints`."""
    inner = getattr(route, "original_router", None)
    if inner is None:
        return True  # a route itself (or a shape not known here): looked at as it is
    return any(_holds(r, endpoints) if hasattr(r, "original_router") else getattr(r, "endpoint", None) in endpoints
               for r in inner.routes)


def _routed(routes: Iterable[Any], endpoints: tuple[Callable[..., Any], ...]) -> Iterable[Any]:
    """Yield each FastAPI route of `routes` as the application serves it: its full path, methods and dependencies,
    an included router's own included (FastAPI ≥ 0.160 keeps included routers whole; older ones copy their routes).

    Only the included routers holding one of `endpoints` are expanded: FastAPI builds an included router's routes
    on its first request, and building all of them here would cost every console start ~0.1 s."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # FastAPI < 0.160: included routes are the application's own APIRoute objects
        yield from routes
        return
    yield from iter_route_contexts([route for route in routes if _holds(route, endpoints)])


def _dispatcher(route: Any) -> Endpoint:
    """Return a function serving `route`'s endpoint: each dependency awaited in the route's order, then the call.

    Only what the direct path can resolve exactly as FastAPI would is accepted: async dependencies of the request
    alone, an async endpoint of the request and those dependencies; anything else is refused when the table is built.
    """
    dependant: Dependant = route.dependant
    steps: list[tuple[str | None, Callable[[Request], Awaitable[Any]]]] = []
    for sub in dependant.dependencies:
        if sub.call is None or not inspect.iscoroutinefunction(sub.call) or sub.dependencies or not _plain(sub) \
                or sub.request_param_name is None:
            raise TypeError(f"{route.path}: dependency {sub.call!r} is not an async function of the request alone")
        steps.append((sub.name, sub.call))
    if not inspect.iscoroutinefunction(route.endpoint) or not _plain(dependant) or dependant.request_param_name is None:
        raise TypeError(f"{route.path}: {route.endpoint.__name__} is not an async endpoint of the request and its "
                        "dependencies")
    endpoint, request_name, status = route.endpoint, dependant.request_param_name, route.status_code or 200

    async def serve(request: Request) -> Response:
        values: dict[str, Any] = {request_name: request}
        for name, call in steps:
            value = await call(request)
            if name is not None:
                values[name] = value
        result = await endpoint(**values)
        return result if isinstance(result, Response) else JSONResponse(result, status_code=status)

    return serve


def hot_routes(routes: Iterable[Any], endpoints: Iterable[Callable[..., Any]] = HOT_ENDPOINTS) \
        -> dict[tuple[str, str], Endpoint]:
    """Return `(method, path) → dispatcher` for the routes among `routes` whose endpoint is one of `endpoints`;
    raise LookupError when one of `endpoints` is routed nowhere (a hot path never silently goes cold)."""
    wanted = tuple(endpoints)
    table: dict[tuple[str, str], Endpoint] = {}
    found: set[Callable[..., Any]] = set()
    for route in _routed(routes, wanted):
        if getattr(route, "dependant", None) is not None and route.endpoint in wanted:
            found.add(route.endpoint)
            serve = _dispatcher(route)
            for method in sorted(route.methods):
                table[(method, route.path)] = serve
    missing = [e.__name__ for e in wanted if e not in found]
    if missing:
        raise LookupError(f"hot endpoints without a route: {', '.join(missing)}")
    return table


class HotPaths:
    """ASGI middleware: serve the hot routes directly, pass everything else on.

    Inside the application (`app.add_middleware(HotPaths)`, what in-process tests see) it finds the application in
    the scope and reads its routes on the first request; the server also puts it in front of the whole application
    (`HotPaths(app, application=app)`), which reads the routes at once and spares the application's own middleware
    stack on the hot routes."""

    def __init__(self, app: ASGIApp, application: Any = None,
                 endpoints: Iterable[Callable[..., Any]] = HOT_ENDPOINTS) -> None:
        self.app = app
        self._application = application
        self._endpoints = tuple(endpoints)
        self._table = hot_routes(application.router.routes, self._endpoints) if application is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        table = self._table
        if table is None:
            table = self._table = hot_routes(scope["app"].router.routes, self._endpoints)
        endpoint = table.get((scope["method"], scope["path"]))
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
