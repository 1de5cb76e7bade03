"""`/api/whoami` and `/api/usage/mine`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from ...services.accounts import status as account_status
from ...services.accounts.credentials import UserView
from ...services.context import Runtime
from ..deps import current_user, refuse_nul_parameters, runtime

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.get("/api/whoami")
def whoami(user: UserView = Depends(current_user)) -> dict[str, Any]:
    """Return the caller's account (also its username at the top level, for the official client)."""
    return account_status.whoami(user=user)


@router.get("/api/usage/mine")
def usage_mine(user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return the caller's quota and usage."""
    return account_status.usage_report(rt=rt, user=user)
