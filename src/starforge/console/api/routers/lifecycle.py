"""Export and eval on finished runs (`POST /api/jobs/{ref}/followups`, and the official client's `POST /api/post`),
and cleaning an experiment (`POST /api/clean?exp=`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from ...services.accounts.credentials import UserView
from ...services.context import Runtime
from ...services.jobs import experiment_clean, followup_requests
from ..body import read_json_object
from ..deps import current_user, refuse_nul_parameters, runtime, upload_dir
from ..multipart import submission_body
from ._openapi import FOLLOWUP, SUBMISSION

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.post("/api/jobs/{ref}/followups", openapi_extra=FOLLOWUP)
async def create_followup(ref: str, request: Request, user: UserView = Depends(current_user),
                          rt: Runtime = Depends(runtime)) -> JSONResponse:
    """Queue one follow-up (`{"action": "export" | "eval", "benchmarks"?: [...], "profile"?}`) on the caller's
    succeeded run `ref`; answers like `POST /api/jobs` (202, queued) plus `parent`."""
    body = await read_json_object(request)
    outcome = await run_in_threadpool(followup_requests.followup_from_body, rt=rt, user=user, ref=ref, body=body)
    return JSONResponse(outcome.body, status_code=outcome.status_code)


@router.post("/api/post", openapi_extra=SUBMISSION)
async def post_followup(request: Request, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime),
                        spool: Path = Depends(upload_dir)) -> JSONResponse:
    """The official client's `sf export` / `sf eval`: gzip body and X-Forge-Meta with `action` and `flags`; the
    follow-up runs on the caller's newest succeeded run of `exp` (see docs/console.md)."""
    async with submission_body(request, rt=rt, user=user, directory=spool) as envelope:
        outcome = await run_in_threadpool(followup_requests.post_followup, rt=rt, user=user, envelope=envelope)
    return JSONResponse(outcome.body, status_code=outcome.status_code)


@router.post("/api/clean")
def clean(exp: str = Query("", max_length=1024, description="the experiment (its path or last part)"),
          user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Delete the run folders of the caller's finished jobs of `exp`; active ones are skipped and named."""
    return experiment_clean.clean_experiment(rt=rt, user=user, exp=exp)
