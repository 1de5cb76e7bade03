"""Volume listing endpoint: the volumes (registered by administrators) the caller may mount."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from ...services.accounts.credentials import UserView
from ...services.context import Runtime
from ...services.registries import assets
from ..deps import current_user, refuse_nul_parameters, runtime

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.get("/api/volumes")
def list_volumes(user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """List the volumes the caller may read (own, public, granted), each with its versions newest first."""
    return assets.volumes(rt=rt, user=user)
