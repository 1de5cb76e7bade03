"""`POST /api/ingest/*`: calls from inside running jobs, authorised by the run's own token."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from ...services.context import Runtime
from ...services.jobs import ingest as ingest_service
from ..body import read_json
from ..deps import refuse_nul_parameters, run_token, runtime
from ._openapi import INGEST

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.post("/api/ingest/{path:path}", openapi_extra=INGEST)
async def ingest(path: str, request: Request, token: str = Depends(run_token),
                 rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Record lifecycle events, log chunks, metric points, hyperparameters, artifacts or reports of a run
    (a request without a run token is refused before its body is read)."""
    body = await read_json(request, limit=16 * 1024 * 1024)
    return await run_in_threadpool(ingest_service.ingest, rt=rt, path=path, token=token, body=body)
