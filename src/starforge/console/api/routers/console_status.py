"""`GET /api/console`: this console process and the one that leads the scheduler (any signed-in account)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from ...services.accounts.credentials import UserView
from ...services.context import Runtime
from ...services.leadership.report import console_report
from ..deps import current_user, refuse_nul_parameters, runtime

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.get("/api/console")
def console_status(_user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return this process (console id, host, pid) and the leader (console id, host, pid, epoch, heartbeat)."""
    return console_report(rt=rt)
