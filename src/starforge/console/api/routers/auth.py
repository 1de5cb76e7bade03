"""Login endpoints: the device-code flow (with approval by a signed-in user), refresh and logout. The browser page
of the device flow (`/cli/device`) is the web console's (`routers.web`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from ...services.accounts import device_logins, logins
from ...services.accounts.credentials import UserView
from ...services.context import Runtime
from ..body import read_json
from ..deps import client_address, current_user, refuse_nul_parameters, runtime
from ._openapi import DEVICE_CODE, DEVICE_TOKEN, REFRESH_TOKEN, USER_CODE

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.post("/api/cli/device/code", openapi_extra=DEVICE_CODE)
async def device_code(request: Request, rt: Runtime = Depends(runtime),
                      client: str = Depends(client_address)) -> dict[str, Any]:
    """Start a device login: the client shows the URI and the code, then polls (429 past the address's limits)."""
    body = await read_json(request)
    return await run_in_threadpool(device_logins.start, rt=rt, body=body, base_url=str(request.base_url),
                                   client=client)


@router.post("/api/cli/device/token", openapi_extra=DEVICE_TOKEN)
async def device_token(request: Request, rt: Runtime = Depends(runtime)) -> JSONResponse:
    """Poll a device login: 200 with tokens once approved, else 400 with the RFC 8628 error in `detail`."""
    body = await read_json(request)
    outcome = await run_in_threadpool(device_logins.poll, rt=rt, body=body)
    return JSONResponse(outcome.body, status_code=outcome.status_code)


@router.post("/api/cli/device/approve", openapi_extra=USER_CODE)
async def device_approve(request: Request, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime),
                         client: str = Depends(client_address)) -> dict[str, Any]:
    """Approve a pending device login for the caller (`sf login approve CODE`)."""
    body = await read_json(request)
    return await run_in_threadpool(device_logins.approve, rt=rt, user=user, body=body, client=client)


@router.post("/api/cli/device/deny", openapi_extra=USER_CODE)
async def device_deny(request: Request, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime),
                      client: str = Depends(client_address)) -> dict[str, Any]:
    """Refuse a pending device login (an administrator, or the account the device names)."""
    body = await read_json(request)
    return await run_in_threadpool(device_logins.deny, rt=rt, user=user, body=body, client=client)


@router.post("/api/auth/refresh", openapi_extra=REFRESH_TOKEN)
async def refresh(request: Request, rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Rotate a refresh token into a new access and refresh token."""
    body = await read_json(request)
    return await run_in_threadpool(logins.refresh, rt=rt, body=body)


@router.post("/api/auth/logout", openapi_extra=REFRESH_TOKEN)
async def logout(request: Request, rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Revoke the login behind a refresh token (unknown tokens are ignored)."""
    body = await read_json(request)
    return await run_in_threadpool(logins.logout, rt=rt, body=body)
