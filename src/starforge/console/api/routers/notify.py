"""Webhooks of the caller's account (`sf notify`): add one (its secret shown in that answer only), list, remove,
and read the delivery log."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Path, Query, Request
from starlette.concurrency import run_in_threadpool

from ...services.accounts.credentials import UserView
from ...services.context import Runtime
from ...services.notify import deliveries, hooks
from ..body import read_json_object
from ..deps import current_user, refuse_nul_parameters, runtime
from ._openapi import NOTIFY_HOOK

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])
_ID = Path(ge=1, le=2**63 - 1)


@router.post("/api/notify/hooks", status_code=201, openapi_extra=NOTIFY_HOOK)
async def add_hook(request: Request, user: UserView = Depends(current_user),
                   rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Add a webhook `{url, events?}`; the signing secret is in this answer only."""
    body = await read_json_object(request)
    return await run_in_threadpool(hooks.add_hook, rt, user=user, body=body)


@router.get("/api/notify/hooks")
def list_hooks(user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """List your webhooks (secret prefixes, never the secrets) with their deliveries counted by state."""
    return hooks.list_hooks(rt, user=user)


@router.delete("/api/notify/hooks/{hook_id}")
def remove_hook(hook_id: int = _ID, user: UserView = Depends(current_user),
                rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Remove one of your webhooks and its deliveries."""
    return hooks.remove_hook(rt, user=user, hook_id=hook_id)


@router.get("/api/notify/deliveries")
def delivery_log(hook: int | None = Query(None, ge=1, le=2**63 - 1),
                 limit: int = Query(50, ge=1, le=deliveries.MAX_LIMIT), user: UserView = Depends(current_user),
                 rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Your deliveries (of webhook `hook` when given), newest first, each with its attempts."""
    return deliveries.delivery_log(rt, user=user, hook_id=hook, limit=limit)
