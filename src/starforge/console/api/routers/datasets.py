"""Dataset registry endpoints: push a file or folder (gzip tar) as an immutable version; list and show what you
may read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from ...runtime import Runtime
from ...services import assets, dataset_push
from ...services.accounts import UserView
from ..body import spooled_body
from ..deps import current_user, refuse_nul_parameters, runtime, upload_dir
from ._openapi import DATASET_PUSH

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.post("/api/datasets/push", openapi_extra=DATASET_PUSH)
async def push(request: Request, name: str = "", version: str = "", visibility: str = "private", owner: str = "",
               user: UserView = Depends(current_user), rt: Runtime = Depends(runtime),
               spool: Path = Depends(upload_dir)) -> dict[str, Any]:
    """Push `<owner>/<name>@<version>` (owner: the caller) from a gzip tar body; re-pushing a version is 409.

    The caller is authenticated before any of the body is read; the body is then spooled to disk, never memory."""
    async with spooled_body(request, limit=rt.settings.max_dataset_bytes, directory=spool) as upload:
        return await run_in_threadpool(dataset_push.push, rt=rt, user=user, owner=owner, name=name, version=version,
                                       visibility=visibility, upload=upload)


@router.get("/api/datasets")
def list_datasets(user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """List the datasets the caller may read (own, public, granted), each with its versions newest first."""
    return assets.datasets(rt=rt, user=user)


@router.get("/api/datasets/{owner}/{name}")
def show_dataset(owner: str, name: str, version: str = "", user: UserView = Depends(current_user),
                 rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Show one readable dataset version (the newest by default) with its files."""
    return assets.dataset(rt=rt, user=user, owner=owner, name=name, version=version)
