"""`GET /api/job/mirror`: the caller's job's MLflow mirror (state, MLflow run, points waiting, last failure)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from ...services.accounts.credentials import UserView
from ...services.context import Runtime
from ...services.mirror import mirror_of
from ..deps import current_user, refuse_nul_parameters, runtime

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.get("/api/job/mirror")
def job_mirror(id: str = "", user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Show where the job's metrics are mirrored and how far (`mirror` null when they are not)."""
    return mirror_of(rt=rt, user=user, ref=id)
