"""`/api/version` (no auth)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from ...services import handshake
from ..deps import refuse_nul_parameters

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.get("/api/version")
def version() -> dict[str, str]:
    """Return the console version and the API generation."""
    return handshake.version()
