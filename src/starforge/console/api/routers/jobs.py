"""Submission and job endpoints: `POST /api/jobs` (gzip + X-Forge-Meta, or multipart), list, show, and control
(stop, pause, resume, retry: `POST /api/job/{action}?id=` as the wire has them, and `POST /api/jobs/{ref}/{action}`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool

from ...services.accounts.credentials import UserView
from ...services.audit import MAX_ADMISSIONS_LIMIT
from ...services.context import Runtime
from ...services.jobs import (
    artifact_downloads,
    submissions,
)
from ...services.jobs import (
    control as job_control,
)
from ...services.jobs import (
    reads as job_reads,
)
from ...services.jobs import (
    render as job_render,
)
from ...services.jobs.queries import MAX_LIST_LIMIT
from ...services.runs import diff_runs, lineage, run_inputs
from ..body import read_json
from ..deps import current_user, refuse_nul_parameters, runtime, upload_dir
from ..multipart import submission_body
from ._openapi import ADMISSION_CHECK, SUBMISSION

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.post("/api/jobs", openapi_extra=SUBMISSION)
async def submit_job(request: Request, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime),
                     spool: Path = Depends(upload_dir)) -> JSONResponse:
    """Admit and persist a job; 200 when it starts, 202 when it is queued, 400/403 with every problem.

    The caller is authenticated before any of the body is read (a multipart body: its role too); the body is then
    spooled to disk, never memory, each multipart part within the limit of its name."""
    async with submission_body(request, rt=rt, user=user, directory=spool) as envelope:
        outcome = await run_in_threadpool(submissions.submit, rt=rt, user=user, envelope=envelope,
                                          idempotency_key=request.headers.get("idempotency-key"))
    return JSONResponse(outcome.body, status_code=outcome.status_code)


@router.post("/api/admission/check", openapi_extra=ADMISSION_CHECK)
async def admission_check(request: Request, user: UserView = Depends(current_user),
                          rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return the full verdict of `{spec, profile?, allow_pending?}` (stages B–E without a bundle); nothing is
    stored."""
    body = await read_json(request)
    return await submissions.check_soon(rt=rt, user=user, body=body)


@router.get("/api/jobs/mine")
def jobs_mine(limit: int = Query(15, ge=1, le=MAX_LIST_LIMIT, description="rows, newest first"),
              all: bool = False,
              status: str = Query("", max_length=200, description="only these statuses, comma-separated"),
              exp: str = Query("", max_length=1024, description="only this experiment (its path or last part)"),
              since: float | None = Query(None, ge=0, description="only jobs submitted at or after (epoch seconds)"),
              sweep: str = Query("", max_length=160, description="only the jobs of this sweep (404 if not yours)"),
              user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """List the caller's jobs, newest first (`all=true` lists every account's for an admin), optionally filtered."""
    return job_reads.list_jobs(rt=rt, user=user, limit=limit, everyone=all, status=status, exp=exp, since=since,
                               sweep=sweep)


@router.get("/api/job")
def job(id: str = "", user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Show one job (by job_ref or run_id) with its events."""
    return job_reads.show(rt=rt, user=user, ref=id)


@router.post("/api/job/stop")
def stop(id: str = "", user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Stop a job; stopping a finished job answers `stopped: false` with its status."""
    return job_control.stop(rt=rt, user=user, ref=id)


@router.post("/api/job/pause")
def pause(id: str = "", user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Pause a job: a waiting one is held at once, a running one checkpoints, stops and is held (`paused`, its place
    in the queue kept) until resumed; `paused: false` when there was nothing to pause."""
    return job_control.pause(rt=rt, user=user, ref=id)


@router.post("/api/job/resume")
def resume(id: str = "", user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Put a paused job back in the queue in its place (or cancel a pause still under way)."""
    return job_control.resume(rt=rt, user=user, ref=id)


@router.post("/api/job/retry")
def retry(id: str = "", user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Run a failed or stopped job again, as the same job, from its latest checkpoint; 409 for any other status."""
    return job_control.retry(rt=rt, user=user, ref=id)


@router.post("/api/jobs/{ref}/pause")
def pause_job(ref: str, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """`POST /api/job/pause?id=` with the job in the path."""
    return job_control.pause(rt=rt, user=user, ref=ref)


@router.post("/api/jobs/{ref}/resume")
def resume_job(ref: str, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """`POST /api/job/resume?id=` with the job in the path."""
    return job_control.resume(rt=rt, user=user, ref=ref)


@router.post("/api/jobs/{ref}/retry")
def retry_job(ref: str, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """`POST /api/job/retry?id=` with the job in the path."""
    return job_control.retry(rt=rt, user=user, ref=ref)


@router.post("/api/jobs/cancel-all")
def cancel_all(user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Stop every unfinished job of the caller."""
    return job_control.cancel_all(rt=rt, user=user)


@router.get("/api/jobs/{ref}/jobspec")
def jobspec(ref: str, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> Any:
    """Return the admitted, owner-stamped JobSpec."""
    return job_reads.jobspec(rt=rt, user=user, ref=ref)


@router.get("/api/jobs/{ref}/inputs", summary="What a run is made of")
def inputs(ref: str, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return the run's recipe, runtime, image and digest, model, data, hyperparameters, merged config, lab commit,
    placement, seeds and attempts."""
    return run_inputs(rt=rt, user=user, ref=ref)


@router.get("/api/jobs/{ref}/lineage", summary="Where a run comes from and what came of it")
def job_lineage(ref: str, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return the run's parents (the job it follows up, its init_from run) and children (follow-ups, runs started
    from it), of the caller only, and its sweep."""
    return lineage(rt=rt, user=user, ref=ref)


@router.get("/api/jobs/{a}/diff/{b}", summary="Why two runs differ")
def job_diff(a: str, b: str, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return the two runs' differences as ordered sections with a summary line, the per-file stat of their
    bundles, and their final metrics side by side (404 unless both are the caller's)."""
    return diff_runs(rt=rt, user=user, a=a, b=b)


@router.get("/api/jobs/{ref}/artifacts")
def artifacts(ref: str, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return the artifacts a run registered."""
    return job_reads.artifacts(rt=rt, user=user, ref=ref)


@router.get("/api/jobs/{ref}/artifacts/download")
def download_artifact(ref: str, path: str = Query("", description="the artifact's registered path, or its path "
                                                                     "inside the run's output folder; empty: every "
                                                                     "artifact the console holds"),
                      user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> StreamingResponse:
    """Stream one registered artifact (a file or folder of the run's output), or all, as a gzip tar; owner or admin
    only."""
    found = artifact_downloads.open_download(rt=rt, user=user, ref=ref, path=path)
    return StreamingResponse(found.chunks(), media_type="application/gzip",
                             headers={"Content-Disposition": f'attachment; filename="{found.filename}"'})


@router.get("/api/jobs/{ref}/render")
def render(ref: str, fmt: str = Query("kuberay", alias="format", description="kuberay: a KubeRay RayJob manifest"),
           user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return `{job_ref, format, manifest}`: the job rendered as an engine's document (YAML text in `manifest`)."""
    return job_render.render(rt=rt, user=user, ref=ref, fmt=fmt)


@router.get("/api/jobs/{ref}/metrics")
def metrics(ref: str, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return a run's metric series and latest values."""
    return job_reads.metrics(rt=rt, user=user, ref=ref)


@router.get("/api/admissions/mine")
def admissions_mine(limit: int = Query(50, ge=1, le=MAX_ADMISSIONS_LIMIT, description="rows, newest first"),
                    user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return the caller's admission decisions, newest first."""
    return job_reads.admissions(rt=rt, user=user, limit=limit)
