"""The one translator from domain errors (and framework errors) to the wire shape `{detail, problems}`."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse

from ...contract import Problem, render_problems
from ..services.errors import ConsoleError, Rejected, TooManyRequests

__all__ = ["error_body", "error_headers", "install_error_handlers"]

log = logging.getLogger("starforge.console")


def error_body(title: str, problems: list[Problem], warnings: list[Problem] | None = None) -> dict[str, Any]:
    """Return `{detail: "Title\\n- field: message", problems: [...]}` (and warnings when there are any)."""
    body: dict[str, Any] = {
        "detail": render_problems(title, problems) if problems else title,
        "problems": [p.to_dict() for p in problems],
    }
    if warnings:
        body["warnings"] = [str(w) for w in warnings]
    return body


def error_headers(exc: ConsoleError) -> dict[str, str]:
    """Return the headers a refusal carries: how to authenticate (401), how long to wait (429)."""
    if isinstance(exc, TooManyRequests):
        return {"Retry-After": str(exc.retry_after)}
    return {"WWW-Authenticate": "Bearer"} if exc.status == 401 else {}


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers: domain errors, 404/405 from routing, malformed bodies (422), and anything else (500)."""

    @app.exception_handler(ConsoleError)
    async def _domain(_request: Request, exc: ConsoleError) -> JSONResponse:
        warnings = exc.warnings if isinstance(exc, Rejected) else None
        return JSONResponse(error_body(exc.detail, exc.problems, warnings), status_code=exc.status,
                            headers=error_headers(exc) or None)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail if isinstance(exc.detail, str) else "request failed"
        if exc.status_code == 404 and detail == "Not Found":
            detail = "no such endpoint"
        return JSONResponse({"detail": detail, "problems": []}, status_code=exc.status_code)

    @app.exception_handler(RequestValidationError)
    async def _validation(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors():
            loc = [str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path", "header")]
            field = ".".join(loc) or "<body>"
            problems.append(Problem(field, "invalid_request", str(err.get("msg", "invalid")),
                                    f"fix {field}: /openapi.json gives its type and allowed range"))
        return JSONResponse(error_body("Invalid request", problems), status_code=422)

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error", exc_info=exc)
        return JSONResponse({"detail": "internal error: the console logged the cause", "problems": []},
                            status_code=500)
