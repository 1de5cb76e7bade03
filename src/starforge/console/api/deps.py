"""Request dependencies: the runtime, the caller (bearer token, a browser session on the web pages, or a run's token
for ingest), the client's address and where uploads are spooled."""

from __future__ import annotations

from pathlib import Path

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from ...contract import Problem
from ..services.accounts import logins, roles
from ..services.accounts.credentials import UserView
from ..services.context import Runtime
from ..services.errors import AuthRequired, Forbidden, Rejected
from ..web.sessions import Arrival, WebCaller, cookie_name, origin_of, reached_securely

__all__ = ["bearer_token", "client_address", "current_admin", "current_user", "refuse_nul_parameters", "run_token",
           "runtime", "upload_dir", "web_arrival", "web_caller", "web_visitor"]


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


async def _account_of(rt: Runtime, token: str, *, web: bool = False) -> UserView:
    """The account behind an API token, or with `web` a browser session: from memory when seen before, else the
    database. Neither is accepted for the other (a session offered to the API is a 401 saying so)."""
    cached = rt.accounts.cached_user(token, web=web)
    if cached is not None:
        return cached
    return await run_in_threadpool(logins.authenticate, rt, token=token, web=web)


async def client_address(request: Request) -> str:
    """Return the client's address: the connection's peer (a proxy's forwarded address only when the server was
    told to trust that proxy, `trusted_proxies`), or "" when there is none; what per-client limits count by."""
    return request.client.host if request.client is not None else ""


def _secure(request: Request) -> bool:
    return reached_securely(request.url.scheme, _runtime(request).settings.public_url)


async def web_arrival(request: Request) -> Arrival:
    """Return where a browser request comes from: its address, HTTPS or not, the `Origin` and `Sec-Fetch-Site` it
    sent, and the origins this console answers as (this request's own, and the configured `public_url`'s)."""
    own = (origin_of(str(request.base_url)), origin_of(_runtime(request).settings.public_url))
    return Arrival(await client_address(request), _secure(request), request.headers.get("origin", ""),
                   request.headers.get("sec-fetch-site", ""), tuple(o for o in own if o))


async def web_caller(request: Request) -> WebCaller:
    """Return the caller of a web console request: the browser session of its cookie (`__Host-sf_session` over
    HTTPS, `sf_session` over HTTP), or else its bearer token exactly as `current_user` (401 otherwise)."""
    secret = request.cookies.get(cookie_name(_secure(request)), "")
    if not secret:
        return WebCaller(await current_user(request))
    return WebCaller(await _account_of(_runtime(request), secret, web=True), secret)


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
