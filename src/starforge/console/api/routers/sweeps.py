"""Sweep endpoints: submit a sweep as one admission decision (`POST /api/sweeps`, our extension), list and show the
caller's sweeps with their runs ranked, and stop one (`POST /api/sweeps/{sweep_id}/stop`, the official client's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool

from ...services.accounts.credentials import UserView
from ...services.context import Runtime
from ...services.sweeps import actions as sweeps
from ...services.sweeps import reads as sweep_reads
from ..deps import current_user, refuse_nul_parameters, runtime, upload_dir
from ..multipart import writer_parts
from ._openapi import SWEEP

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.post("/api/sweeps", openapi_extra=SWEEP)
async def submit_sweep(request: Request, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime),
                       spool: Path = Depends(upload_dir)) -> dict[str, Any]:
    """Admit every point of a sweep (multipart: a `sweep` JSON part and a `bundle` file) and create all of its jobs
    at once; 422 naming `points[i]…` when any point is refused (nothing is stored). The caller's role is checked
    before any part is read, and each part streams within the limit of its name."""
    async with writer_parts(request, rt=rt, user=user, directory=spool) as parts:
        return await run_in_threadpool(sweeps.submit, rt=rt, user=user, parts=parts)


@router.get("/api/sweeps")
def list_sweeps(limit: int = Query(50, ge=1, le=sweep_reads.MAX_SWEEPS_LIMIT, description="sweeps, newest first"),
                user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """List the caller's sweeps, newest first, with their runs counted by status."""
    return sweep_reads.list_sweeps(rt=rt, user=user, limit=limit)


@router.get("/api/sweeps/{sweep_id}")
def show_sweep(sweep_id: str, metric: str = Query("", max_length=255, description="rank by this metric (default: "
                                                                                  "the recipe's first primary one)"),
               user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Show a sweep's runs (values, status, final metrics) ranked by a metric, the best run marked."""
    return sweep_reads.show(rt=rt, user=user, sweep_id=sweep_id, metric=metric)


@router.post("/api/sweeps/{sweep_id}/stop")
def stop_sweep(sweep_id: str, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Stop every unfinished job of a sweep: `{stopped, failed: [{id, error}]}`."""
    return sweeps.stop(rt=rt, user=user, sweep_id=sweep_id)
