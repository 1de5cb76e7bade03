"""`/api/version` (no auth)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from .... import __version__
from ..deps import refuse_nul_parameters

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.get("/api/version")
def version() -> dict[str, str]:
    """Return the console version and the API generation."""
    return {"server": __version__, "api": "forge/v2"}
