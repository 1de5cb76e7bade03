"""The web console's routes (`/`, `/ui/...`, `/docs`): adapters from HTTP to `console.web`, which holds the pages.

A request is authenticated by its session cookie (or, like the API, a bearer token: `deps.web_caller`). A refusal is
a page for a browser (a request accepting HTML) and the API's JSON error for everything else; forms answer with a
redirect (POST, then GET). Every answer, redirects included, carries `PAGE_HEADERS`; the device flow's browser page
(`/cli/device`) is only a redirect to the web console's own.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from fastapi.routing import APIRoute
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

from ... import web
from ...services.context import Runtime
from ...services.errors import AuthRequired, ConsoleError, NotFound
from ...services.jobs import artifact_downloads
from ...services.jobs.queries import MAX_LIST_LIMIT
from ...services.logs import download as log_download
from ...services.logs import stream as log_stream
from ...services.sweeps.reads import MAX_SWEEPS_LIMIT
from ...web import (
    admin_pages,
    benchmark_pages,
    compare_pages,
    diff_pages,
    playground_pages,
    share_pages,
    sweep_pages,
)
from ...web.pages import DEFAULT_ROWS
from ..deps import client_address, refuse_nul_parameters, runtime, web_arrival, web_caller, web_visitor
from ..errors import error_headers

# every page: nothing may load from anywhere but this console, and no other site may frame it
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
                               "form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _page(html: str, status: int = 200, headers: dict[str, str] | None = None) -> HTMLResponse:
    return HTMLResponse(html, status_code=status, headers={**PAGE_HEADERS, **(headers or {})})


def _redirect(location: str) -> RedirectResponse:
    return RedirectResponse(location, status_code=303, headers=PAGE_HEADERS)


def _answer(answer: admin_pages.FormAnswer) -> Response:
    """A form's answer: a redirect once done, else the page it renders (the form again, or a one-time secret)."""
    if answer.location:
        return _redirect(answer.location)
    return _page(answer.html, answer.status)


class _WebRoute(APIRoute):
    """A route whose refusals are pages when a browser asks for HTML (the API's JSON errors otherwise)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                return await handler(request)
            except ConsoleError as refused:
                if "text/html" not in request.headers.get("accept", ""):
                    raise
                if isinstance(refused, AuthRequired):
                    after = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                    return _page(web.signin_page(f"Sign in to see this page ({refused.detail}).", after=after), 401)
                return _page(web.error_page(await web_visitor(request), refused.status, refused.detail),
                             refused.status, error_headers(refused))

        return handle


router = APIRouter(include_in_schema=False, route_class=_WebRoute, dependencies=[Depends(refuse_nul_parameters)])
Caller = Depends(web_caller)
Client = Depends(client_address)


@router.get("/")
def home(status: str = Query("", max_length=200), exp: str = Query("", max_length=1024),
         sweep: str = Query("", max_length=160), limit: int = Query(DEFAULT_ROWS, ge=1, le=MAX_LIST_LIMIT),
         visitor: web.WebCaller | None = Depends(web_visitor), rt: Runtime = Depends(runtime)) -> HTMLResponse:
    """The jobs page, or the sign-in page for a visitor who is not signed in."""
    if visitor is None:
        return _page(web.signin_page())
    return _page(web.jobs_page(rt, visitor, status=status, exp=exp, sweep=sweep, limit=limit))


@router.post("/ui/signin")
def signin(token: str = Form(""), after: str = Form("/"), arrival: web.Arrival = Depends(web_arrival),
           rt: Runtime = Depends(runtime)) -> Response:
    """Check the API token typed into the sign-in page, start a browser session (an HttpOnly cookie) and show the
    page asked for (only ever a page of this console); a form from another origin, a bad token or too many failures
    is the sign-in page again, saying why."""
    try:
        session = web.sign_in(rt, token=token, arrival=arrival)
    except ConsoleError as refused:
        return _page(web.signin_page(f"Not signed in: {refused.detail}", after=after), refused.status,
                     error_headers(refused))
    response = _redirect(web.local_path(after))
    response.set_cookie(session.cookie, session.secret, max_age=session.max_age, path="/", httponly=True,
                        samesite="strict", secure=session.secure)
    return response


@router.post("/ui/signout")
def signout(csrf: str = Form(""), caller: web.WebCaller = Caller, arrival: web.Arrival = Depends(web_arrival),
            rt: Runtime = Depends(runtime)) -> Response:
    """End the browser session: it is revoked and its cookie cleared (the form's CSRF token is checked)."""
    web.check_csrf(caller, csrf)
    web.sign_out(rt, secret=caller.session)
    response = _redirect("/")
    response.delete_cookie(web.cookie_name(arrival.secure), path="/", httponly=True, samesite="strict",
                           secure=arrival.secure)
    return response


@router.get("/ui/api/jobs")
def jobs_live(status: str = Query("", max_length=200), exp: str = Query("", max_length=1024),
              sweep: str = Query("", max_length=160), limit: int = Query(DEFAULT_ROWS, ge=1, le=MAX_LIST_LIMIT),
              caller: web.WebCaller = Caller, rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """The statuses the jobs page refreshes."""
    return web.jobs_live(rt, caller, status=status, exp=exp, sweep=sweep, limit=limit)


@router.get("/ui/jobs/{ref}")
def job(ref: str, caller: web.WebCaller = Caller, rt: Runtime = Depends(runtime)) -> HTMLResponse:
    """A job's page."""
    return _page(web.job_page(rt, caller, ref=ref))


@router.get("/ui/jobs/{ref}/live")
def job_live(ref: str, caller: web.WebCaller = Caller, rt: Runtime = Depends(runtime)) -> JSONResponse:
    """What a job's page refreshes while the job runs."""
    return JSONResponse(web.job_live(rt, caller, ref=ref), headers={"Cache-Control": "no-store"})


@router.get("/ui/jobs/{ref}/logs")
async def job_logs(request: Request, ref: str,
                   tail: int = Query(log_stream.PAGE_LINES, ge=0, le=log_stream.MAX_TAIL, description="lines to replay first"),
                   caller: web.WebCaller = Caller, rt: Runtime = Depends(runtime)) -> StreamingResponse:
    """The job's log as Server-Sent Events for the page's terminal view: `/api/job/logs/stream` for the session
    cookie, but raw (carriage returns kept: `raw` events of JSON text, after a `start` event)."""
    opened = await run_in_threadpool(log_stream.open_stream, rt=rt, user=caller.user, ref=ref, tail=tail,
                                     resume=request.headers.get("last-event-id"), raw=True)
    return StreamingResponse(opened.frames(is_disconnected=request.is_disconnected), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@router.get("/ui/jobs/{ref}/log.txt")
def job_log_file(ref: str, caller: web.WebCaller = Caller, rt: Runtime = Depends(runtime)) -> StreamingResponse:
    """The job's whole log, its raw bytes, as a file (`<job>.log`) streamed from the log file."""
    found = log_download.open_download(rt=rt, user=caller.user, ref=ref)
    return StreamingResponse(iterate_in_threadpool(found.chunks()), media_type="text/plain; charset=utf-8",
                             headers={**PAGE_HEADERS, "Content-Length": str(found.size),
                                      "Content-Disposition": f'attachment; filename="{found.filename}"'})


@router.get("/ui/jobs/{ref}/artifacts/download")
def job_artifact(ref: str, path: str = "", caller: web.WebCaller = Caller,
                 rt: Runtime = Depends(runtime)) -> StreamingResponse:
    """One artifact (or all) as a gzip tar (`/api/jobs/{ref}/artifacts/download` for the session cookie)."""
    found = artifact_downloads.open_download(rt=rt, user=caller.user, ref=ref, path=path)
    return StreamingResponse(iterate_in_threadpool(found.chunks()), media_type="application/gzip",
                             headers={"Content-Disposition": f'attachment; filename="{found.filename}"'})


@router.post("/ui/jobs/{ref}/stop")
def job_stop(ref: str, csrf: str = Form(""), caller: web.WebCaller = Caller,
             rt: Runtime = Depends(runtime)) -> RedirectResponse:
    """Stop a job from its page, then show the page again."""
    outcome = web.stop_job(rt, caller, ref=ref, csrf=csrf)
    return _redirect(f"/ui/jobs/{outcome['job_ref']}")


@router.post("/ui/jobs/{ref}/pause")
def job_pause(ref: str, csrf: str = Form(""), caller: web.WebCaller = Caller,
              rt: Runtime = Depends(runtime)) -> RedirectResponse:
    """Pause a job from its page, then show the page again."""
    outcome = web.pause_job(rt, caller, ref=ref, csrf=csrf)
    return _redirect(f"/ui/jobs/{outcome['job_ref']}")


@router.post("/ui/jobs/{ref}/resume")
def job_resume(ref: str, csrf: str = Form(""), caller: web.WebCaller = Caller,
               rt: Runtime = Depends(runtime)) -> RedirectResponse:
    """Resume a paused job from its page, then show the page again."""
    outcome = web.resume_job(rt, caller, ref=ref, csrf=csrf)
    return _redirect(f"/ui/jobs/{outcome['job_ref']}")


@router.post("/ui/jobs/{ref}/retry")
def job_retry(ref: str, csrf: str = Form(""), caller: web.WebCaller = Caller,
              rt: Runtime = Depends(runtime)) -> RedirectResponse:
    """Retry a failed or stopped job from its page, then show the page again."""
    outcome = web.retry_job(rt, caller, ref=ref, csrf=csrf)
    return _redirect(f"/ui/jobs/{outcome['job_ref']}")


@router.get("/ui/rejections")
def rejections(caller: web.WebCaller = Caller, rt: Runtime = Depends(runtime)) -> HTMLResponse:
    """The caller's recent admission decisions."""
    return _page(web.rejections_page(rt, caller))


@router.get("/ui/quota")
def quota(caller: web.WebCaller = Caller, rt: Runtime = Depends(runtime)) -> HTMLResponse:
    """The caller's quota and usage, and the cluster's capacity."""
    return _page(web.quota_page(rt, caller))


@router.get("/ui/recipes")
def recipes(caller: web.WebCaller = Caller, rt: Runtime = Depends(runtime)) -> HTMLResponse:
    """The served recipe catalog."""
    return _page(web.recipes_page(rt, caller))


@router.get("/cli/device")
def cli_device(code: str = Query("", max_length=64)) -> RedirectResponse:
    """The device flow's verification page (wire §4.3): the web console's approval page, signed in there."""
    return _redirect("/ui/device" + (f"?{urlencode({'code': code[:16]})}" if code else ""))


@router.get("/ui/device")
def device(code: str = Query("", max_length=64), caller: web.WebCaller = Caller) -> HTMLResponse:
    """The first step of approving a CLI device login: the code to look up (a link may fill it in)."""
    return _page(web.device_page(caller, code=code))


@router.post("/ui/device/review")
def device_review(user_code: str = Form(""), csrf: str = Form(""), caller: web.WebCaller = Caller,
                  client: str = Client, rt: Runtime = Depends(runtime)) -> HTMLResponse:
    """The second step: which device asks, with the buttons approving (or denying) it (CSRF checked)."""
    login = web.review_device(rt, caller, user_code=user_code, csrf=csrf, client=client)
    return _page(web.device_review_page(caller, login))


@router.post("/ui/device")
def device_approve(user_code: str = Form(""), csrf: str = Form(""), caller: web.WebCaller = Caller,
                   client: str = Client, rt: Runtime = Depends(runtime)) -> HTMLResponse:
    """Approve a CLI device login from its review (the form's CSRF token is checked)."""
    web.approve_device(rt, caller, user_code=user_code, csrf=csrf, client=client)
    return _page(web.device_page(caller, message="Approved: return to your terminal."))


@router.post("/ui/device/deny")
def device_deny(user_code: str = Form(""), csrf: str = Form(""), caller: web.WebCaller = Caller,
                client: str = Client, rt: Runtime = Depends(runtime)) -> HTMLResponse:
    """Deny a CLI device login from its review (an administrator, or the account the device names; CSRF checked)."""
    web.deny_device(rt, caller, user_code=user_code, csrf=csrf, client=client)
    return _page(web.device_page(caller, message="Denied: that terminal's login was refused."))


@router.get("/ui/benchmarks/compare")
def benchmarks_compare(runs: str = Query("", max_length=2000), caller: web.WebCaller = Caller,
                       rt: Runtime = Depends(runtime)) -> HTMLResponse:
    """The benchmark comparison of the caller's runs (`GET /api/benchmarks/compare` as a page)."""
    return _page(benchmark_pages.compare_page(rt, caller, runs=runs))


@router.get("/ui/compare")
def compare(runs: list[str] = Query([], max_length=4000), sweep: str = Query("", max_length=160),
            exp: str = Query("", max_length=1024), caller: web.WebCaller = Caller,
            rt: Runtime = Depends(runtime)) -> HTMLResponse:
    """The comparison of up to 20 of the caller's runs (`?runs=a,b`, `runs` repeated, `?sweep=` or `?exp=`)."""
    return _page(compare_pages.compare_page(rt, caller, runs=runs, sweep=sweep, exp=exp))


@router.get("/ui/diff")
def diff(a: str = Query("", max_length=64), b: str = Query("", max_length=64), caller: web.WebCaller = Caller,
         rt: Runtime = Depends(runtime)) -> HTMLResponse:
    """Why two of the caller's runs differ (`GET /api/jobs/{a}/diff/{b}` as a page), or the form to name them."""
    return _page(diff_pages.diff_page(rt, caller, a=a, b=b))


@router.get("/ui/sweeps")
def sweeps(limit: int = Query(50, ge=1, le=MAX_SWEEPS_LIMIT), caller: web.WebCaller = Caller,
           rt: Runtime = Depends(runtime)) -> HTMLResponse:
    """The caller's sweeps (`GET /api/sweeps` as a page)."""
    return _page(sweep_pages.sweeps_page(rt, caller, limit=limit))


@router.get("/ui/sweeps/{sweep_id}")
def sweep(sweep_id: str, metric: str = Query("", max_length=255), sort: str = Query("rank", max_length=300),
          dir: str = Query("asc", max_length=4), caller: web.WebCaller = Caller,
          rt: Runtime = Depends(runtime)) -> HTMLResponse:
    """One sweep's runs, ranked by a metric and sorted by a column (`GET /api/sweeps/{sweep_id}` as a page)."""
    return _page(sweep_pages.sweep_page(rt, caller, sweep_id=sweep_id, metric=metric, sort=sort, direction=dir))


@router.get("/ui/playground")
def playground(caller: web.WebCaller = Caller, rt: Runtime = Depends(runtime)) -> HTMLResponse:
    """The playground: the caller's services to pick one from."""
    return _page(playground_pages.playground_page(rt, caller))


@router.get("/ui/playground/{service_id}")
def playground_service(service_id: str, caller: web.WebCaller = Caller, rt: Runtime = Depends(runtime)) -> HTMLResponse:
    """One service's playground: its model, run and expiry, and a chat streamed through the proxy."""
    return _page(playground_pages.playground_page(rt, caller, service_id=service_id))


@router.post("/ui/playground/{service_id}/extend")
def playground_extend(service_id: str, hours: str = Form("", max_length=40), csrf: str = Form(""),
                      caller: web.WebCaller = Caller, rt: Runtime = Depends(runtime)) -> Response:
    """Extend a service from its playground (CSRF checked), then show the page again (a refusal at its field)."""
    return _answer(playground_pages.extend_service(rt, caller, service_id=service_id, hours=hours, csrf=csrf))


@router.post("/ui/playground/{service_id}/stop")
def playground_stop(service_id: str, csrf: str = Form(""), caller: web.WebCaller = Caller,
                    rt: Runtime = Depends(runtime)) -> Response:
    """Stop a service from its playground (CSRF checked), then show the page again."""
    return _answer(playground_pages.stop_service(rt, caller, service_id=service_id, csrf=csrf))


@router.get("/ui/admin")
def admin(user: str = Query("", max_length=200), done: str = Query("", max_length=20),
          caller: web.WebCaller = Caller, rt: Runtime = Depends(runtime)) -> HTMLResponse:
    """The administrators' page: accounts, roles, maintenance mode, and one account's API tokens and quota."""
    return _page(web.admin_page(rt, caller, account=user, done=done))


@router.post("/ui/admin/users")
def admin_create_user(username: str = Form(""), role: str = Form(""), email: str = Form(""), csrf: str = Form(""),
                      caller: web.WebCaller = Caller, rt: Runtime = Depends(runtime)) -> Response:
    """Create an account and show its first API token once (administrators only; CSRF checked)."""
    return _answer(admin_pages.create_account(rt, caller, values={"username": username, "role": role,
                                                                  "email": email}, csrf=csrf))


@router.post("/ui/admin/tokens")
def admin_create_token(username: str = Form(""), name: str = Form(""), expires_in: str = Form(""),
                       csrf: str = Form(""), caller: web.WebCaller = Caller, rt: Runtime = Depends(runtime)) -> Response:
    """Create an API token for an account and show it once (administrators only; CSRF checked)."""
    return _answer(admin_pages.create_token(rt, caller, username=username, name=name, expires_in=expires_in,
                                            csrf=csrf))


@router.post("/ui/admin/tokens/{token_id}/revoke")
def admin_revoke_token(token_id: str, csrf: str = Form(""), caller: web.WebCaller = Caller,
                       rt: Runtime = Depends(runtime)) -> Response:
    """Revoke an API token (administrators only; CSRF checked)."""
    return _answer(admin_pages.revoke_token(rt, caller, token_id=token_id, csrf=csrf))


async def _quota_form(request: Request) -> dict[str, str]:
    """The quota form's fields (`admin_pages.QUOTA_FIELDS`, from the quota table), each "" when not sent."""
    form = await request.form()
    return {key: value if isinstance(value := form.get(key, ""), str) else "" for key in admin_pages.QUOTA_FIELDS}


@router.post("/ui/admin/quotas")
def admin_set_quota(username: str = Form(""), values: dict[str, str] = Depends(_quota_form), csrf: str = Form(""),
                    caller: web.WebCaller = Caller, rt: Runtime = Depends(runtime)) -> Response:
    """Set an account's quota (administrators only; CSRF checked)."""
    return _answer(admin_pages.set_quota(rt, caller, username=username, values=values, csrf=csrf))


@router.post("/ui/admin/users/{username}/role")
def admin_role(username: str, role: str = Form(""), csrf: str = Form(""), caller: web.WebCaller = Caller,
               rt: Runtime = Depends(runtime)) -> RedirectResponse:
    """Change an account's role (administrators only; the form's CSRF token is checked)."""
    web.set_role(rt, caller, username=username, role=role, csrf=csrf)
    return _redirect("/ui/admin")


@router.post("/ui/admin/users/{username}/disabled")
def admin_disabled(username: str, disabled: bool = Form(False), csrf: str = Form(""), caller: web.WebCaller = Caller,
                   rt: Runtime = Depends(runtime)) -> RedirectResponse:
    """Disable or enable an account (administrators only; the form's CSRF token is checked)."""
    web.set_disabled(rt, caller, username=username, disabled=disabled, csrf=csrf)
    return _redirect("/ui/admin")


@router.post("/ui/admin/maintenance")
def admin_maintenance(on: bool = Form(False), note: str = Form("", max_length=500), csrf: str = Form(""),
                      caller: web.WebCaller = Caller, rt: Runtime = Depends(runtime)) -> Response:
    """Turn maintenance mode on (with a note) or off (administrators only; CSRF checked)."""
    return _answer(admin_pages.set_maintenance(rt, caller, on=on, note=note, csrf=csrf))


@router.get("/ui/admin/shares")
def admin_shares(done: str = Query("", max_length=20), caller: web.WebCaller = Caller,
                 rt: Runtime = Depends(runtime)) -> HTMLResponse:
    """The fair-share page: each account's weight, share, usage and borrowing (administrators only)."""
    return _page(share_pages.shares_page(rt, caller, done=done))


@router.post("/ui/admin/shares")
def admin_set_share(username: str = Form(""), weight: str = Form("", max_length=64), csrf: str = Form(""),
                    caller: web.WebCaller = Caller, rt: Runtime = Depends(runtime)) -> Response:
    """Set an account's fair-share weight (administrators only; CSRF checked)."""
    return _answer(share_pages.set_weight(rt, caller, username=username, weight=weight, csrf=csrf))


@router.get("/ui/static/{name:path}")
def static(name: str) -> Response:
    """One of the console's own static files (404 for any other name)."""
    found = web.asset(name)
    if found is None:
        raise NotFound(f"no static file {name!r}")
    return Response(found.body, media_type=found.media_type,
                    headers={"Cache-Control": "public, max-age=31536000, immutable", "X-Content-Type-Options": "nosniff"})


@router.get("/docs")
def api_docs(request: Request, visitor: web.WebCaller | None = Depends(web_visitor)) -> HTMLResponse:
    """The API reference, rendered from the console's OpenAPI schema (nothing loaded from elsewhere)."""
    return _page(web.api_docs_page(request.app.openapi(), visitor))
