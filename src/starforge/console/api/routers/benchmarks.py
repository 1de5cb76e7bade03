"""Benchmark endpoints: the suites offered, a run's scores, the comparison of runs, and the official client's
external-harness runs (`POST /api/benchmarks/external`, `…/external/scores`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query

from ...services.accounts.credentials import UserView
from ...services.benchmarks import reads as bench_reads
from ...services.context import Runtime
from ..deps import current_user, refuse_nul_parameters, runtime

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
