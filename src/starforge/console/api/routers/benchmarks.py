"""Benchmark endpoints: the suites offered, a run's scores, the comparison of runs, and the official client's
external-harness runs (`POST /api/benchmarks/external`, `…/external/scores`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool

from ...services.accounts.credentials import UserView
from ...services.benchmarks import external as bench_external
from ...services.benchmarks import reads as bench_reads
from ...services.context import Runtime
from ..body import read_json
from ..deps import current_user, refuse_nul_parameters, run_token, runtime
from ._openapi import EXTERNAL_EVALUATION, EXTERNAL_SCORES

router = APIRouter(dependencies=[Depends(refuse_nul_parameters)])


@router.get("/api/benchmarks")
def suites(user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return `{suites: [...]}`: every benchmark suite this console offers (builtin and enabled packs)."""
    return bench_reads.offered_suites(rt=rt, user=user)


@router.get("/api/benchmarks/compare")
def compare(runs: str = Query("", max_length=2000, description="run ids, comma-separated; the first is the baseline"),
            user: UserView = Depends(current_user), rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Compare runs on every suite and metric they reported: mean, spread and n over repeats, and a verdict of each
    run against the first (better/worse only beyond the evaluation's own variance)."""
    return bench_reads.compare_runs(rt=rt, user=user, runs=runs)


@router.get("/api/jobs/{ref}/benchmarks")
def job_benchmarks(ref: str, user: UserView = Depends(current_user),
                   rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Return the benchmark scores a run reported."""
    return bench_reads.job_scores(rt=rt, user=user, ref=ref)


@router.post("/api/benchmarks/external", openapi_extra=EXTERNAL_EVALUATION)
async def open_external(request: Request, user: UserView = Depends(current_user),
                        rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Open an external evaluation `{model, harness?, train_run_id?, note?}`: `{run_id, token}`, the token reporting
    this run's scores only."""
    body = await read_json(request, limit=64 * 1024)
    return await run_in_threadpool(bench_external.open_external, rt=rt, user=user, body=body)


@router.post("/api/benchmarks/external/scores", openapi_extra=EXTERNAL_SCORES)
async def report_external(request: Request, token: str = Depends(run_token),
                          rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    """Report an external evaluation's scores `{run_id, scores: [{benchmark, metric, value}], model?, harness?}`
    with its token (or the owner's bearer token): `{written}`."""
    body = await read_json(request, limit=16 * 1024 * 1024)
    return await run_in_threadpool(bench_external.report_external, rt=rt, token=token, body=body)
