"""`GET /api/runs/{run_id}/workdir`: a running job's work folder for the engine that starts it, by the run's token."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from ...services.context import Runtime
from ...services.jobs import run_workdir
from ..deps import refuse_nul_parameters, run_token, runtime

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.get("/api/runs/{run_id}/workdir")
async def workdir(run_id: str, token: str = Depends(run_token), rt: Runtime = Depends(runtime)) -> StreamingResponse:
    """Stream the run's prepared work folder as a gzip tar (`X-StarForge-Token`: the run's own token)."""
    chunks = await run_in_threadpool(run_workdir.workdir_chunks, rt=rt, run_id=run_id, token=token)
    return StreamingResponse(chunks, media_type="application/gzip",
                             headers={"Content-Disposition": f'attachment; filename="{run_id}-work.tar.gz"'})
