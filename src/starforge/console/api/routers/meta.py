"""`/api/version` (no auth)."""

from __future__ import annotations

from fastapi import APIRouter

from .... import __version__

router = APIRouter()


@router.get("/api/version")
def version() -> dict[str, str]:
    """Return the console version and the API generation."""
    return {"server": __version__, "api": "forge/v2"}
