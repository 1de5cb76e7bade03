"""Submission and job endpoints: `POST /api/jobs` (gzip + X-Forge-Meta, or multipart), list, show, stop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from ....contract import Problem
from ...runtime import Runtime
from ...services import job_reads, submissions
from ...services.accounts import UserView
from ...services.admission import Meta, parse_meta_header, read_meta
from ...services.errors import Rejected
from ..body import Upload, json_depth_problem, load_json, read_json, read_multipart, spooled_body
from ..deps import current_user, refuse_nul_parameters, runtime, upload_dir
from ._openapi import ADMISSION_CHECK, SUBMISSION

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])

MAX_LIST_LIMIT = 1000  # rows of /api/jobs/mine per request; clients send 1, 15 and 200
MAX_ADMISSIONS_LIMIT = 500  # rows of /api/admissions/mine per request


def _envelope_from_multipart(parts: dict[str, bytes | str]) -> tuple[Any, bytes | None, list[Problem]]:
    raw = parts.get("spec")
    if raw is None:
        return None, None, [Problem("spec", "meta_invalid", "the multipart body needs a `spec` part (JSON)",
                                    "send the JobSpec as a form field named spec, the bundle as a file named bundle")]
    spec, problems = load_json(raw, "spec")
    if problems:
        return None, None, problems
    exp = parts.get("exp")
    profile = parts.get("profile")
    source = spec.get("spec", {}).get("source", {}) if isinstance(spec, dict) and isinstance(spec.get("spec"), dict) else {}
    meta = {
        "exp": exp if isinstance(exp, str) and exp else (source.get("exp") if isinstance(source, dict) else None),
        "profile": profile if isinstance(profile, str) and profile else submissions.first_pool_series(spec),
        "spec": spec,
    }
    bundle = parts.get("bundle")
    return meta, (bundle if isinstance(bundle, bytes) and bundle else None), []


async def _envelope(request: Request, upload: Upload) -> tuple[Any, bytes | Upload | None, list[Problem]]:
    """Return the submission envelope, the bundle (bytes, or the spooled gzip body) and stage-A problems."""
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        return _envelope_from_multipart(await read_multipart(request, upload))
    header = request.headers.get("x-forge-meta", "")
    too_deep = json_depth_problem(header, "X-Forge-Meta")
    if too_deep is not None:
        return None, None, [too_deep]
    envelope, problems = parse_meta_header(header.encode("latin-1") or None)
    return envelope, (upload if upload.size else None), problems


def _submit(rt: Runtime, user: UserView, meta: Meta, warnings: list[Problem], bundle: bytes | Upload | None,
            idempotency_key: str | None) -> submissions.SubmitOutcome:
    data = bundle.read_bytes() if isinstance(bundle, Upload) else bundle
    return submissions.submit(rt, user, doc=meta.spec, exp=meta.exp, profile=meta.profile, bundle=data,
                              meta=meta.extra, warnings=warnings, idempotency_key=idempotency_key)


@router.post("/api/jobs", openapi_extra=SUBMISSION)
async def submit_job(request: Request, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime),
                     spool: Path = Depends(upload_dir)) -> JSONResponse:
    """Admit and persist a job; 200 when it starts, 202 when it is queued, 400/403 with every problem.

    The caller is authenticated before any of the body is read; the body is then spooled to disk, never memory."""
    async with spooled_body(request, limit=rt.settings.max_bundle_bytes, directory=spool) as upload:
        envelope, bundle, problems = await _envelope(request, upload)
        if problems:
            raise Rejected("The submission was rejected", problems)
        meta, problems, warnings = read_meta(envelope)
        if problems or meta is None:
            raise Rejected("The submission was rejected", problems, warnings=warnings)
        outcome = await run_in_threadpool(_submit, rt, user, meta, warnings, bundle,
                                          request.headers.get("idempotency-key"))
    return JSONResponse(outcome.body, status_code=outcome.status_code)


@router.post("/api/admission/check", openapi_extra=ADMISSION_CHECK)
async def admission_check(request: Request, user: UserView = Depends(current_user),
                          rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return the full verdict of `{spec, profile?}` (stages B–E without a bundle); nothing is stored."""
    body = await read_json(request)
    if not isinstance(body, dict) or "spec" not in body:
        raise Rejected("Invalid request", [Problem("spec", "invalid_request", "the body must be {\"spec\": {...}}")],
                       status=422)
    profile = body.get("profile")
    return await run_in_threadpool(
        submissions.check, rt, user, body["spec"], profile if isinstance(profile, str) else ""
    )


@router.get("/api/jobs/mine")
def jobs_mine(limit: int = Query(15, ge=1, le=MAX_LIST_LIMIT, description="rows, newest first"),
              all: bool = False, user: UserView = Depends(current_user),
              rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """List the caller's jobs, newest first (`all=true` lists every account's for an admin)."""
    return {"jobs": job_reads.list_jobs(rt, user, limit=limit, everyone=all)}


@router.get("/api/job")
def job(id: str = "", user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Show one job (by job_ref or run_id) with its events."""
    return job_reads.show(rt, user, id)


@router.post("/api/job/stop")
def stop(id: str = "", user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Stop a job; stopping a finished job answers `stopped: false` with its status."""
    return job_reads.stop(rt, user, id)


@router.post("/api/jobs/cancel-all")
def cancel_all(user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Stop every unfinished job of the caller."""
    return job_reads.cancel_all(rt, user)


@router.get("/api/jobs/{ref}/jobspec")
def jobspec(ref: str, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> Any:
    """Return the admitted, owner-stamped JobSpec."""
    return job_reads.jobspec(rt, user, ref)


@router.get("/api/jobs/{ref}/artifacts")
def artifacts(ref: str, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return the artifacts a run registered."""
    return {"artifacts": job_reads.artifacts(rt, user, ref)}


@router.get("/api/jobs/{ref}/metrics")
def metrics(ref: str, user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return a run's metric series and latest values."""
    return job_reads.metrics(rt, user, ref)


@router.get("/api/admissions/mine")
def admissions_mine(limit: int = Query(50, ge=1, le=MAX_ADMISSIONS_LIMIT, description="rows, newest first"),
                    user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return the caller's admission decisions, newest first."""
    return {"admissions": job_reads.admissions(rt, user, limit=limit)}
