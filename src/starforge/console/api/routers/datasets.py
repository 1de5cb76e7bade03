"""Dataset registry endpoints: push a file or folder (gzip tar) as an immutable dataset or corpus version; list and
show the datasets you may read."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from ...services.accounts.credentials import UserView
from ...services.context import Runtime
from ...services.registries import assets
from ..deps import current_user, refuse_nul_parameters, runtime
from ._push import add_push_route

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])
add_push_route(router, "dataset", "/api/datasets/push")
add_push_route(router, "corpus", "/api/corpora/push")  # `GET /api/corpora` lists them (routers/admin.py)


@router.get("/api/datasets")
def list_datasets(user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """List the datasets the caller may read (own, public, granted), each with its versions newest first."""
    return assets.datasets(rt=rt, user=user)


@router.get("/api/datasets/{owner}/{name}")
def show_dataset(owner: str, name: str, version: str = "", user: UserView = Depends(current_user),
                 rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Show one readable dataset version (the newest by default) with its files."""
    return assets.dataset(rt=rt, user=user, owner=owner, name=name, version=version)
