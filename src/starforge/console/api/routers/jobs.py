"""Submission and job endpoints: `POST /api/jobs` (gzip + X-Forge-Meta, or multipart), list, show, stop."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from ....contract import JsonObject, Problem
from ...runtime import Runtime
from ...services import job_reads, submissions
from ...services.accounts import UserView
from ...services.admission import parse_meta_header, read_meta
from ...services.errors import Rejected
from ..body import read_body, read_json, read_multipart
from ..deps import current_user, runtime

router = APIRouter()


def _envelope_from_multipart(parts: dict[str, bytes | str]) -> tuple[Any, bytes | None, list[Problem]]:
    raw = parts.get("spec")
    if raw is None:
        return None, None, [Problem("spec", "meta_invalid", "the multipart body needs a `spec` part (JSON)")]
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    try:
        spec = json.loads(text, object_pairs_hook=JsonObject)
    except ValueError as exc:
        return None, None, [Problem("spec", "invalid_json", f"the spec part is not valid JSON: {exc}")]
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


@router.post("/api/jobs")
async def submit_job(request: Request, rt: Runtime = Depends(runtime)) -> JSONResponse:
    """Admit and persist a job; 200 when it starts, 202 when it is queued, 400/403 with every problem."""
    data = await read_body(request, rt.settings.max_bundle_bytes)
    user: UserView = await run_in_threadpool(current_user, request)
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        envelope, bundle, problems = _envelope_from_multipart(await read_multipart(request, data))
    else:
        envelope, problems = parse_meta_header(request.headers.get("x-forge-meta", "").encode("latin-1") or None)
        bundle = data or None
    if problems:
        raise Rejected("The submission was rejected", problems)
    meta, problems, warnings = read_meta(envelope)
    if problems or meta is None:
        raise Rejected("The submission was rejected", problems, warnings=warnings)
    outcome = await run_in_threadpool(
        lambda: submissions.submit(
            rt, user, doc=meta.spec, exp=meta.exp, profile=meta.profile, bundle=bundle, meta=meta.extra,
            warnings=warnings, idempotency_key=request.headers.get("idempotency-key"),
        )
    )
    return JSONResponse(outcome.body, status_code=outcome.status_code)


@router.post("/api/admission/check")
async def admission_check(request: Request, rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return the full verdict of `{spec, profile?}` (stages B–E without a bundle); nothing is stored."""
    body = await read_json(request)
    user: UserView = await run_in_threadpool(current_user, request)
    if not isinstance(body, dict) or "spec" not in body:
        raise Rejected("Invalid request", [Problem("spec", "invalid_request", "the body must be {\"spec\": {...}}")],
                       status=422)
    profile = body.get("profile")
    return await run_in_threadpool(
        submissions.check, rt, user, body["spec"], profile if isinstance(profile, str) else ""
    )


@router.get("/api/jobs/mine")
def jobs_mine(limit: int = 15, all: bool = False, user: UserView = Depends(current_user),
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
def admissions_mine(limit: int = 50, user: UserView = Depends(current_user),
                    rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return the caller's admission decisions, newest first."""
    return {"admissions": job_reads.admissions(rt, user, limit=limit)}
