"""The hot path's table is read from the router's routes: the same methods, paths and dependencies, in FastAPI's
order, served without the application's middleware; a route it cannot serve as FastAPI would is refused when built."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import pytest
from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient

from starforge.console.api.hot_paths import HOT_ENDPOINTS, HotPaths, hot_routes
from starforge.console.api.routers import jobs


def test_the_console_s_hot_table_is_the_router_s_routes_of_the_hot_endpoints() -> None:
    app = FastAPI()
    app.include_router(jobs.router)
    declared = {(method, route.path) for route in jobs.router.routes
                if getattr(route, "endpoint", None) in HOT_ENDPOINTS for method in route.methods}
    assert set(hot_routes(app.router.routes)) == declared == {("POST", "/api/admission/check"), ("POST", "/api/jobs")}


def test_a_hot_endpoint_routed_nowhere_is_refused() -> None:
    with pytest.raises(LookupError, match="admission_check, submit_job"):
        hot_routes(FastAPI().router.routes)


Seen = list[str]


def _app(seen: Seen) -> FastAPI:
    async def first(request: Request) -> None:
        seen.append("router dependency")

    async def caller(request: Request) -> str:
        seen.append("caller")
        if request.headers.get("authorization") != "Bearer ok":
            raise PermissionError("no token")
        return "alice"

    async def hot(request: Request, user: str = Depends(caller)) -> dict[str, Any]:
        seen.append("endpoint")
        return {"user": user, "body": (await request.json())}

    async def elsewhere(request: Request) -> dict[str, str]:
        return {"served": "by FastAPI"}

    router = APIRouter(dependencies=[Depends(first)])
    router.add_api_route("/hot", hot, methods=["POST"])
    router.add_api_route("/hot", elsewhere, methods=["GET"])
    app = FastAPI()
    app.include_router(router)

    async def refused(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=401)

    app.add_exception_handler(PermissionError, refused)

    @app.middleware("http")
    async def stack(request: Request, call_next: Callable[[Request], Awaitable[Any]]) -> Any:
        seen.append(f"middleware {request.method}")
        return await call_next(request)

    app.state.hot = hot
    return app


def _served(app: FastAPI) -> TestClient:
    front = HotPaths(app, application=app, endpoints=[app.state.hot])  # as the server mounts it, in front of all

    async def asgi(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        await front(scope, receive, send)

    return TestClient(asgi)


def test_a_hot_route_is_served_with_its_dependencies_in_order_and_without_the_middleware_stack() -> None:
    seen: Seen = []
    app = _app(seen)
    with _served(app) as client:
        answer = client.post("/hot", json={"x": 1}, headers={"Authorization": "Bearer ok"})
    assert answer.status_code == 200 and answer.json() == {"user": "alice", "body": {"x": 1}}
    assert seen == ["router dependency", "caller", "endpoint"]


def test_a_refused_dependency_stops_before_the_endpoint_and_is_rendered_by_the_application_s_handler() -> None:
    seen: Seen = []
    with _served(_app(seen)) as client:
        answer = client.post("/hot", json={"x": 1})
    assert (answer.status_code, answer.json()) == (401, {"detail": "no token"})
    assert seen == ["router dependency", "caller"]


def test_another_method_on_a_hot_path_goes_through_fastapi() -> None:
    seen: Seen = []
    app = _app(seen)
    table = hot_routes(app.router.routes, [app.state.hot])
    assert set(table) == {("POST", "/hot")}
    with _served(app) as client:
        answer = client.get("/hot")
    assert answer.json() == {"served": "by FastAPI"} and seen == ["middleware GET", "router dependency"]


def test_an_endpoint_the_direct_path_cannot_resolve_as_fastapi_would_is_refused_when_the_table_is_built() -> None:
    async def with_query(request: Request, limit: int = Query(1)) -> dict[str, int]:
        return {"limit": limit}

    def sync_dependency(request: Request) -> str:
        return "x"

    async def with_sync(request: Request, value: str = Depends(sync_dependency)) -> dict[str, str]:
        return {"value": value}

    app = FastAPI()
    app.add_api_route("/q", with_query, methods=["POST"])
    app.add_api_route("/s", with_sync, methods=["POST"])
    with pytest.raises(TypeError, match="/q: with_query"):
        hot_routes(app.router.routes, [with_query])
    with pytest.raises(TypeError, match="/s: dependency"):
        hot_routes(app.router.routes, [with_sync])
