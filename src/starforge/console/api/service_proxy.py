"""The proxy to a service: who is asking (`caller`), and the byte relay over the service's Unix socket (`forward`).

The decisions (who may reach which service, its status, its TTL) are `services.serving`'s; this module only reads
the credential from the request and moves bytes. A response streams through as the server writes it (SSE included),
never buffered; no request reaches a service by TCP, and the socket is opened without following a link
(`socket_door`).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

from fastapi import Request
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from ..services.context import Runtime
from ..services.errors import AuthRequired, Conflict, Forbidden, NotFound, Unavailable
from ..services.serving import keys, lifecycle, socket_door
from ..services.serving.access import CSRF_HEADER, KEY_PREFIX, Credential, decide
from ..web.sessions import WebCaller, check_csrf, cookie_name
from .body import read_body
from .deps import _account_of, _runtime, _secure

__all__ = ["MAX_REQUEST_BYTES", "caller", "forward", "proxy"]

MAX_REQUEST_BYTES = 8 * 1024 * 1024
_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                  "transfer-encoding", "upgrade", "host", "content-length", "authorization", "cookie", CSRF_HEADER})


async def caller(request: Request) -> Credential:
    """Return what the request proves: a service key, an API token, a web session (with or without its CSRF
    token), or nothing."""
    rt = _runtime(request)
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip() if scheme.lower() == "bearer" else ""
    if token.startswith(KEY_PREFIX):
        found = await run_in_threadpool(keys.identify_key, rt, token)
        return Credential("key", found[0], found[1]) if found is not None else Credential()
    if token:
        try:
            return Credential("token", (await _account_of(rt, token)).id)
        except AuthRequired:
            return Credential()
    secret = request.cookies.get(cookie_name(_secure(request)), "")
    if secret:
        try:
            user = await _account_of(rt, secret, web=True)
        except AuthRequired:
            return Credential()
        try:
            check_csrf(WebCaller(user, secret), request.headers.get(CSRF_HEADER, ""))
            ok = True
        except Forbidden:  # whether that matters is the access rule's decision (safe methods need none)
            ok = False
        return Credential("session", user.id, csrf_ok=ok)
    return Credential()


async def forward(request: Request, socket_fd: int, path: str) -> StreamingResponse:
    """Send the request to `/v1/<path>` of the server behind the socket open at `socket_fd` (an `O_PATH`
    descriptor, closed here once connected) and stream its answer back."""
    import httpx

    try:
        body = await read_body(request, MAX_REQUEST_BYTES)
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _HOP]
        client = httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=socket_door.connect_path(socket_fd)),
                                   timeout=httpx.Timeout(30.0, read=None))
        target = httpx.URL("http://service/v1/" + path, query=request.url.query.encode())
        try:
            upstream = await client.send(client.build_request(request.method, target, headers=headers,
                                                              content=body), stream=True)
        except BaseException:
            await client.aclose()
            raise
    finally:
        os.close(socket_fd)  # connected (or failed): the checked inode is no longer needed

    async def relay() -> AsyncIterator[bytes]:
        async for chunk in upstream.aiter_raw():
            yield chunk

    async def close() -> None:
        await upstream.aclose()
        await client.aclose()

    kept = {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP}
    return StreamingResponse(relay(), status_code=upstream.status_code, headers=kept, background=BackgroundTask(close))


_REFUSALS = {
    401: AuthRequired("authentication required: a bearer token of the service's owner, one of its keys (sfk-…), "
                      "or the owner's web session"),
    403: Forbidden("a web session must send its CSRF token (X-CSRF-Token) to change anything"),
}


async def proxy(request: Request, rt: Runtime, service_id: str, path: str) -> StreamingResponse:
    """Answer `ANY /api/services/{id}/v1/{path}`: the access rule, the service's status, its TTL moved, the relay."""
    import httpx  # here, not at import: httpx (and the CLI it loads) costs console start-up ~0.1 s

    cred = await caller(request)
    target = await run_in_threadpool(lifecycle.proxy_target, rt, service_id=service_id)
    verdict = decide(cred, owner_id=target.owner_id if target else -1, service_id=service_id,
                     method=request.method) if target is not None else (401 if not cred.via else 404)
    if verdict in _REFUSALS:
        raise _REFUSALS[verdict]
    if verdict != 200 or target is None:
        raise NotFound(f"no service {service_id!r} of yours (see `sf serve ls`)")
    if target.status in ("stopped", "failed"):
        raise Conflict(f"service {service_id} has {'stopped' if target.status == 'stopped' else 'failed'}: "
                       "start a new one with `sf serve start`")
    await run_in_threadpool(lifecycle.touch, rt, service_id=service_id)  # asking counts as use, ready or not yet
    if target.status != "ready":
        raise Unavailable(f"service {service_id} is {target.status}: ask again once `sf serve ls` shows it ready")
    socket_fd = await run_in_threadpool(socket_door.open_socket, target.run_dir)  # never through a link
    try:
        return await forward(request, socket_fd, path)
    except httpx.TransportError as exc:
        raise Unavailable(f"service {service_id} does not answer ({type(exc).__name__}); it may be stopping") from exc
