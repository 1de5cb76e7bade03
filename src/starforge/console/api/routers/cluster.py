"""`/api/cluster/status` (the profile registry), `/api/extensions` and `/api/recipes` (the catalog handshake)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from ...services import handshake
from ...services.accounts import status as account_status
from ...services.accounts.credentials import UserView
from ...services.context import Runtime
from ..deps import current_user, refuse_nul_parameters, runtime

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.get("/api/cluster/status")
def cluster_status(_user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return the profiles, capacity per series (old and new key names) and the active job count."""
    return account_status.cluster_report(rt=rt)


@router.get("/api/extensions")
def extensions(_user: UserView = Depends(current_user)) -> dict[str, Any]:
    """Return the declaration packs to sync (none are published by this console)."""
    return handshake.extensions()


@router.get("/api/recipes")
def recipes(_user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return the served catalog payload with its `catalog_digest`."""
    return handshake.recipes(rt=rt)
