"""Login endpoints: the device-code flow (with approval by a signed-in user), refresh and logout."""

from __future__ import annotations

import base64
import html
from typing import Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, JSONResponse

from ....contract import Problem
from ...runtime import Runtime
from ...services import accounts, device
from ...services.accounts import UserView
from ...services.errors import AuthRequired, ConsoleError, Rejected
from ..body import load_json, read_json
from ..deps import current_user, refuse_nul_parameters, runtime
from ._openapi import DEVICE_CODE, DEVICE_TOKEN, REFRESH_TOKEN, USER_CODE

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


def _decode_device(value: object) -> dict[str, Any]:
    if not isinstance(value, str) or not value:
        return {}
    try:
        raw = base64.urlsafe_b64decode((value + "=" * (-len(value) % 4)).encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        return {}
    info, problems = load_json(raw, "device")  # bounded nesting; an unreadable description is simply dropped
    return info if isinstance(info, dict) and not problems else {}


def _string(body: Any, key: str) -> str:
    value = body.get(key) if isinstance(body, dict) else None
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise Rejected("Invalid request", [Problem(key, "invalid_request", f"{key} is required, as printable text",
                                                   f"send {{\"{key}\": \"...\"}} as shown by the client")],
                       status=422)
    return value.strip()


def _session_body(user: UserView, tokens: accounts.SessionTokens) -> dict[str, Any]:
    return {
        "access_token": tokens.access_token,
        "refresh_token": tokens.refresh_token,
        "expires_in": tokens.expires_in,
        "token_type": "Bearer",
        "user": {"username": user.username, "role": user.role, "email": user.email},
    }


@router.post("/api/cli/device/code", openapi_extra=DEVICE_CODE)
async def device_code(request: Request, rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Start a device login: the client shows the URI and the code, then polls."""
    body = await read_json(request)
    info = _decode_device(body.get("device") if isinstance(body, dict) else None)
    with rt.db.write() as db:
        grant = device.start(db, device_info=info, ttl=rt.settings.device_code_ttl,
                             interval=rt.settings.device_poll_interval)
    base = str(request.base_url).rstrip("/")
    return {
        "device_code": grant.device_code,
        "user_code": grant.user_code,
        "verification_uri": f"{base}/cli/device",
        "verification_uri_complete": f"{base}/cli/device?code={grant.user_code}",
        "interval": grant.interval,
        "expires_in": grant.expires_in,
    }


@router.post("/api/cli/device/token", openapi_extra=DEVICE_TOKEN)
async def device_token(request: Request, rt: Runtime = Depends(runtime)) -> JSONResponse:
    """Poll a device login: 200 with tokens once approved, else 400 with the RFC 8628 error in `detail`."""
    body = await read_json(request)
    code = body.get("device_code") if isinstance(body, dict) else None
    with rt.db.write() as db:
        outcome = device.poll(db, code if isinstance(code, str) else "", access_ttl=rt.settings.access_token_ttl,
                              refresh_ttl=rt.settings.refresh_token_ttl)
    if outcome.error or outcome.user is None or outcome.tokens is None:
        return JSONResponse({"detail": outcome.error or "invalid_grant", "error": outcome.error}, status_code=400)
    return JSONResponse(_session_body(outcome.user, outcome.tokens))


@router.post("/api/cli/device/approve", openapi_extra=USER_CODE)
async def device_approve(request: Request, user: UserView = Depends(current_user),
                         rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Approve a pending device login for the caller (`sf login approve CODE`)."""
    code = _string(await read_json(request), "user_code")
    with rt.db.write() as db:
        info = device.approve(db, user, code)
    return {"approved": True, "username": user.username, "device": info}


@router.post("/api/cli/device/deny", openapi_extra=USER_CODE)
async def device_deny(request: Request, _user: UserView = Depends(current_user),
                      rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Refuse a pending device login."""
    code = _string(await read_json(request), "user_code")
    with rt.db.write() as db:
        device.deny(db, code)
    return {"denied": True}


_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>StarForge · approve a login</title>
<style>body{{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem}}
input{{font-size:1rem;padding:.4rem;width:100%;box-sizing:border-box;margin:.3rem 0 1rem}}
button{{font-size:1rem;padding:.5rem 1.2rem}} .msg{{padding:.6rem;border-radius:.3rem;background:#eef}}</style>
</head><body><h1>Approve a StarForge login</h1>{message}
<form method="post" action="/cli/device"><label>Code shown by <code>sf login</code>
<input name="user_code" value="{code}" autocomplete="off"></label>
<label>Your API token (from <code>sf console token create</code> or an existing login)
<input name="token" type="password" autocomplete="off"></label>
<button type="submit">Approve</button></form>
<p>Or, from a terminal where you are logged in: <code>sf login approve {code_text}</code></p></body></html>"""


@router.get("/cli/device", response_class=HTMLResponse)
def device_page(code: str = "") -> HTMLResponse:
    """Show the approval page of the device flow."""
    safe = html.escape(code[:16])
    return HTMLResponse(_PAGE.format(message="", code=safe, code_text=safe or "CODE"))


@router.post("/cli/device", response_class=HTMLResponse)
def device_page_submit(user_code: str = Form(""), token: str = Form(""), rt: Runtime = Depends(runtime)) -> HTMLResponse:
    """Approve from the page with a token typed by the user."""
    safe = html.escape(user_code[:16])
    try:
        with rt.db.write() as db:
            user = accounts.authenticate(db, token.strip())
            device.approve(db, user, user_code)
        message = f'<p class="msg">Approved for <b>{html.escape(user.username)}</b>: return to your terminal.</p>'
        status = 200
    except ConsoleError as exc:
        message = f'<p class="msg">Not approved: {html.escape(exc.detail)}</p>'
        status = 401 if isinstance(exc, AuthRequired) else 400
    return HTMLResponse(_PAGE.format(message=message, code=safe, code_text=safe or "CODE"), status_code=status)


@router.post("/api/auth/refresh", openapi_extra=REFRESH_TOKEN)
async def refresh(request: Request, rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Rotate a refresh token into a new access and refresh token."""
    secret = _string(await read_json(request), "refresh_token")
    with rt.db.write() as db:
        outcome = accounts.refresh_session(db, secret, access_ttl=rt.settings.access_token_ttl,
                                           refresh_ttl=rt.settings.refresh_token_ttl)
    if outcome.error or outcome.user is None or outcome.tokens is None:
        raise AuthRequired(outcome.error)  # raised after the commit, so a reused token's family stays revoked
    return _session_body(outcome.user, outcome.tokens)


@router.post("/api/auth/logout", openapi_extra=REFRESH_TOKEN)
async def logout(request: Request, rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Revoke the login behind a refresh token (unknown tokens are ignored)."""
    body = await read_json(request)
    secret = body.get("refresh_token") if isinstance(body, dict) else None
    if isinstance(secret, str) and secret:
        with rt.db.write() as db:
            accounts.logout(db, secret)
    return {"ok": True}
