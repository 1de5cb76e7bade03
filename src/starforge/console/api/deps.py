"""Request dependencies: the runtime, the caller (bearer token, or a run's token for ingest) and where uploads are
spooled."""

from __future__ import annotations

from pathlib import Path

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from ...contract import Problem
from ..runtime import Runtime
from ..services import logins, roles
from ..services.accounts import UserView
from ..services.errors import AuthRequired, Forbidden, Rejected
from ..web.sessions import COOKIE, WebCaller

__all__ = ["bearer_token", "current_admin", "current_user", "refuse_nul_parameters", "run_token", "runtime", "upload_dir",
           "web_caller", "web_visitor"]


def _runtime(request: Request) -> Runtime:
    rt: Runtime = request.app.state.runtime
    return rt


async def runtime(request: Request) -> Runtime:
    """Return the console runtime.

    Every dependency here is `async def`, even with nothing to await: FastAPI runs a plain `def` dependency in its
    threadpool, a thread hop per request for microseconds of work."""
    return _runtime(request)


def bearer_token(request: Request) -> str:
    """Return the bearer token of the request, or raise AuthRequired."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthRequired("authentication required: log in with `sf login` (登录)")
    return token.strip()


async def current_user(request: Request) -> UserView:
    """Return the account behind the bearer token (401 when missing, invalid, expired or disabled).

    A token seen before is answered from memory, on the event loop; otherwise the database is read in the
    threadpool."""
    return await _account_of(_runtime(request), bearer_token(request))


async def _account_of(rt: Runtime, token: str) -> UserView:
    """The account behind an API token or a web session's token: from memory when seen before, else the database."""
    cached = rt.accounts.cached_user(token)
    if cached is not None:
        return cached
    return await run_in_threadpool(logins.authenticate, rt, token=token)


async def web_caller(request: Request) -> WebCaller:
    """Return the caller of a web console request: the browser session of its cookie, checked like a bearer token
    (same cache, same refusals), or else its bearer token exactly as `current_user` (401 otherwise)."""
    secret = request.cookies.get(COOKIE, "")
    if not secret:
        return WebCaller(await current_user(request))
    return WebCaller(await _account_of(_runtime(request), secret), secret)


async def web_visitor(request: Request) -> WebCaller | None:
    """Return the caller of a web console request, or None for a visitor who is not (or no longer) signed in."""
    try:
        return await web_caller(request)
    except AuthRequired:
        return None


async def current_admin(request: Request) -> UserView:
    """Return the caller if it is an administrator (403 otherwise)."""
    user = await current_user(request)
    if not roles.can_admin(user):
        raise Forbidden("administrators only")
    return user


async def run_token(request: Request) -> str:
    """Return the run token of an ingest call (`X-StarForge-Token`, or a bearer token), or raise AuthRequired; it is
    checked against its run by the ingest service, which needs the body's run id."""
    token = request.headers.get("x-starforge-token", "").strip()
    if not token:
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        token = value.strip() if scheme.lower() == "bearer" else ""
    if not token:
        raise AuthRequired("a run token is required (X-StarForge-Token)")
    return token


async def upload_dir(request: Request) -> Path:
    """Return where request bodies are spooled: `<state>/uploads`, on the state disk rather than a RAM-backed /tmp."""
    return _runtime(request).settings.state_dir / "uploads"


async def refuse_nul_parameters(request: Request) -> None:
    """Refuse a path or query parameter holding a NUL character, which no database stores or compares (422)."""
    for name, value in [*request.path_params.items(), *request.query_params.multi_items()]:
        if isinstance(value, str) and "\x00" in value:
            raise Rejected("Invalid request", [Problem(name, "invalid_request", f"{name} holds a NUL character",
                                                       "remove the NUL (\\x00) character")], status=422)
