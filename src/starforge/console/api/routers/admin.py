"""Administrator endpoints: users and roles, quotas, data-asset registration."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from ...runtime import Runtime
from ...services import accounts, quota
from ...services.accounts import UserView
from ...services.registries import data
from ..body import read_json_object
from ..deps import current_admin, current_user, refuse_nul_parameters, runtime
from ._openapi import NEW_USER, QUOTA, REGISTER_DATA

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.get("/api/admin/users")
def list_users(_admin: UserView = Depends(current_admin), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """List every account."""
    with rt.db.read() as db:
        return {"users": [u.to_dict() for u in accounts.list_users(db)]}


@router.post("/api/admin/users", openapi_extra=NEW_USER)
async def create_user(request: Request, _admin: UserView = Depends(current_admin),
                      rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Create an account `{username, role?, email?}` and return it with a first API token."""
    body = await read_json_object(request)

    def work() -> dict[str, Any]:
        with rt.db.write() as db:
            user = accounts.create_user_from(db, body)
            token = accounts.issue_api_token(db, user, "created by an administrator")
        return {"user": user.to_dict(), "token": token}

    return await run_in_threadpool(work)


@router.patch("/api/admin/users/{username}/role")
def set_role(username: str, role: str, _admin: UserView = Depends(current_admin),
             rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Change an account's role."""
    with rt.db.write() as db:
        return accounts.set_role(db, username, role).to_dict()


@router.patch("/api/admin/users/{username}/disabled")
def set_disabled(username: str, disabled: bool, admin: UserView = Depends(current_admin),
                 rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Disable (revoking its tokens and stopping its jobs) or re-enable an account."""
    with rt.db.write() as db:
        view = accounts.set_disabled(db, username, disabled, by=admin.username).to_dict()
    rt.wake()
    return view


@router.post("/api/admin/quotas", openapi_extra=QUOTA)
async def set_quota(request: Request, _admin: UserView = Depends(current_admin),
                    rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Set an account's quota `{username, max_concurrent_gpus, max_concurrent_jobs, daily_gpu_hours, …}`."""
    body = await read_json_object(request)

    def work() -> dict[str, Any]:
        with rt.db.write() as db:
            user = accounts.get_user(db, str(body.get("username", "")))
            view = quota.set_quota(db, user, body, rt.settings.quota)
        rt.wake()
        return {"username": user.username, **view.to_dict()}

    return await run_in_threadpool(work)


@router.get("/api/admin/quotas/{username}")
def get_quota(username: str, _admin: UserView = Depends(current_admin), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return an account's quota."""
    with rt.db.read() as db:
        user = accounts.get_user(db, username)
        return {"username": username, **quota.get_quota(db, user, rt.settings.quota).to_dict()}


@router.post("/api/admin/data", openapi_extra=REGISTER_DATA)
async def register_data(request: Request, _admin: UserView = Depends(current_admin),
                        rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Register `{kind, ref: owner/name@version, path, visibility?, grants?}` (corpus, dataset, volume, environment)."""
    body = await read_json_object(request)

    def work() -> dict[str, Any]:
        with rt.db.write() as db:
            return data.register_request(db, body).to_dict()

    return await run_in_threadpool(work)


@router.get("/api/data/{kind}")
def list_data(kind: str, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """List the registered versions of a data kind the caller may read."""
    with rt.db.read() as db:
        return {"items": [a.to_dict() for a in data.list_assets(db, kind, user)]}


@router.get("/api/corpora")
def corpora(user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """List readable corpora grouped by id (the brief-era client's `sf corpus ls`)."""
    with rt.db.read() as db:
        grouped: dict[str, dict[str, Any]] = {}
        for asset in data.list_assets(db, "corpus", user):
            entry = grouped.setdefault(f"{asset.owner}/{asset.name}",
                                       {"id": f"{asset.owner}/{asset.name}", "visibility": asset.visibility,
                                        "versions": []})
            entry["versions"].append(asset.version)
        return {"corpora": list(grouped.values())}
