"""Administrator endpoints: users and roles, API tokens, quotas, fair-share weights, maintenance mode, data-asset
registration; and the data lists any user reads."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from ...services import maintenance
from ...services.accounts import admin
from ...services.accounts.credentials import UserView
from ...services.context import Runtime
from ...services.quota import share_admin
from ...services.registries import assets
from ..body import read_json_object
from ..deps import current_admin, current_user, refuse_nul_parameters, runtime
from ._openapi import MAINTENANCE_DRAIN, NEW_TOKEN, NEW_USER, QUOTA, REGISTER_DATA, SHARE_WEIGHT

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.get("/api/admin/users")
def list_users(_admin: UserView = Depends(current_admin), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """List every account."""
    return admin.list_users(rt=rt)


@router.post("/api/admin/users", openapi_extra=NEW_USER)
async def create_user(request: Request, _admin: UserView = Depends(current_admin),
                      rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Create an account `{username, role?, email?}` and return it with a first API token."""
    body = await read_json_object(request)
    return await run_in_threadpool(admin.create_user, rt=rt, body=body)


@router.patch("/api/admin/users/{username}/role")
def set_role(username: str, role: str, _admin: UserView = Depends(current_admin),
             rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Change an account's role."""
    return admin.set_role(rt=rt, username=username, role=role)


@router.patch("/api/admin/users/{username}/disabled")
def set_disabled(username: str, disabled: bool, admin_user: UserView = Depends(current_admin),
                 rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Disable (revoking its tokens and stopping its jobs) or re-enable an account."""
    return admin.set_disabled(rt=rt, username=username, disabled=disabled, by=admin_user.username)


@router.post("/api/admin/tokens", openapi_extra=NEW_TOKEN)
async def create_token(request: Request, _admin: UserView = Depends(current_admin),
                       rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Create an API token `{username, name?, expires_in? (seconds)}`; the answer holds its secret, shown once."""
    body = await read_json_object(request)
    return await run_in_threadpool(admin.create_token, rt=rt, body=body)


@router.get("/api/admin/tokens")
def list_tokens(username: str, _admin: UserView = Depends(current_admin),
                rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """List an account's API tokens (metadata only: never a secret or a hash)."""
    return admin.list_tokens(rt=rt, username=username)


@router.delete("/api/admin/tokens/{token_id}")
def revoke_token(token_id: str, _admin: UserView = Depends(current_admin),
                 rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Revoke an API token; it is refused from its next request on."""
    return admin.revoke_token(rt=rt, token_id=token_id)


@router.post("/api/admin/quotas", openapi_extra=QUOTA)
async def set_quota(request: Request, _admin: UserView = Depends(current_admin),
                    rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Set an account's quota `{username, max_concurrent_gpus, max_concurrent_jobs, daily_gpu_hours, …}`."""
    body = await read_json_object(request)
    return await run_in_threadpool(admin.set_quota, rt=rt, body=body)


@router.get("/api/admin/quotas/{username}")
def get_quota(username: str, _admin: UserView = Depends(current_admin), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return an account's quota."""
    return admin.get_quota(rt=rt, username=username)


@router.get("/api/admin/shares")
def list_shares(_admin: UserView = Depends(current_admin), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return every account's fair share: weight, share of each series, decayed usage (GPU-hours), what it holds and
    borrows beyond its share, and its waiting jobs."""
    return share_admin.show_shares(rt=rt)


@router.put("/api/admin/shares/{username}", openapi_extra=SHARE_WEIGHT)
async def set_share(username: str, request: Request, _admin: UserView = Depends(current_admin),
                    rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Set an account's fair-share weight `{weight}` (a number above 0; 2 is entitled to twice the share of 1)."""
    body = await read_json_object(request)
    return await run_in_threadpool(share_admin.set_share, rt=rt, username=username, body=body)


@router.get("/api/admin/maintenance")
def get_maintenance(_admin: UserView = Depends(current_admin), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return maintenance mode: its note, the jobs still active (`blockers`) and whether a restart is safe now."""
    return maintenance.status(rt=rt)


@router.post("/api/admin/maintenance/drain", openapi_extra=MAINTENANCE_DRAIN)
async def drain(request: Request, admin_user: UserView = Depends(current_admin),
                rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Turn maintenance mode on (`{note?}`): new work is refused with 503, running jobs run on, queued jobs wait."""
    body = await read_json_object(request)
    return await run_in_threadpool(maintenance.drain, rt=rt, by=admin_user.username, body=body)


@router.post("/api/admin/maintenance/resume")
def resume(admin_user: UserView = Depends(current_admin), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Turn maintenance mode off: submissions are accepted again and queued jobs are placed."""
    return maintenance.resume(rt=rt, by=admin_user.username)


@router.post("/api/admin/data", openapi_extra=REGISTER_DATA)
async def register_data(request: Request, _admin: UserView = Depends(current_admin),
                        rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Register `{kind, ref: owner/name@version, path, visibility?, grants?}` (corpus, dataset, volume, environment)."""
    body = await read_json_object(request)
    return await run_in_threadpool(admin.register_data, rt=rt, body=body)


@router.get("/api/data/{kind}")
def list_data(kind: str, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """List the registered versions of a data kind the caller may read."""
    return assets.list_data(rt=rt, user=user, kind=kind)


@router.get("/api/corpora")
def corpora(user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """List readable corpora grouped by id (the brief-era client's `sf corpus ls`)."""
    return assets.corpora(rt=rt, user=user)
